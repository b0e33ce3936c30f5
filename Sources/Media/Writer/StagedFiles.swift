import Foundation
import JobctlCore

/// One file of a set of outputs, as job results and `--json` list it.
public struct WrittenFile: Sendable, Hashable, Codable {
    /// The file's name in the output directory.
    public var name: String
    public var path: String
    public var bytes: Int64
}

/// Several output files written as a set (thumbnails, a storyboard, a waveform's files): each to
/// a hidden temporary file in the output directory, all renamed into place only when every one
/// is written (`commit()`). Discarded — explicitly, by a failure, or by being dropped — the
/// temporaries are removed and nothing appears under the final names.
///
/// Names are ours (`thumb-001.jpg`), never a user's: a name with a `/` or a leading `.` is a
/// programming error. What already exists under a final name is replaced only if it is a
/// regular file (the same rule as an export's output).
public final class StagedFiles {
    public let directory: String
    private var files: [StagedFile] = []
    private var finished = false
    private let tag: String
    /// Directories this created (deepest last): removed again if nothing is committed.
    private var created: [String] = []

    /// A file written and not yet shown under its name.
    public struct StagedFile: Sendable, Hashable {
        public var name: String
        /// Where it waits: `.NAME.TAG.jobctl.tmp` in the directory.
        public var temporaryPath: String
        public var bytes: Int64
    }

    /// Creates `directory` (and its parents) if missing — removed again should nothing be
    /// committed. `output_forbidden` if it is something other than a directory;
    /// `output_unwritable` if it cannot be created. `tag` names the temporaries (a job's
    /// `JOBID-ATTEMPT`, so a later attempt finds what a killed one left); random by default.
    public init(directory: String, tag: String? = nil) throws(MediaError) {
        self.directory = directory
        self.tag = tag ?? String(UInt64.random(in: 0...UInt64.max), radix: 36)
        var info = stat()
        if lstat(directory, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw MediaError(
                    .outputForbidden,
                    "\(directory) exists and is not a directory: images go into a directory"
                )
            }
        } else {
            var missing: [String] = []
            var path = (directory as NSString).standardizingPath
            while !path.isEmpty && path != "/" && lstat(path, &info) != 0 {
                missing.insert(path, at: 0)
                path = (path as NSString).deletingLastPathComponent
            }
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                created = missing
            } catch {
                throw MediaError(
                    .outputUnwritable,
                    "cannot create the output directory \(directory): \(Self.reason(error))",
                    cause: error
                )
            }
        }
    }

    deinit { removeTemporaries() }

    /// What is staged so far, in the order written.
    public var staged: [StagedFile] { files }

    /// The temporary name `name` is staged under with `tag`.
    public static func temporaryName(of name: String, tag: String) -> String { ".\(name).\(tag).jobctl.tmp" }

    /// Removes the temporaries in `directory` whose tag starts with `tagPrefix` (what earlier,
    /// killed attempts of a job left).
    public static func removeLeftovers(in directory: String, tagPrefix: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(".") && entry.hasSuffix(".jobctl.tmp") {
            let tag = entry.dropLast(".jobctl.tmp".count).split(separator: ".").last ?? ""
            if tag.hasPrefix(tagPrefix) { unlink((directory as NSString).appendingPathComponent(entry)) }
        }
    }

    /// The final path of `name`.
    public func path(of name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Writes `bytes` as `name` (staged: not visible under `name` until `commit()`).
    public func write(_ name: String, _ bytes: [UInt8]) throws(MediaError) {
        precondition(!finished && !name.contains("/") && !name.hasPrefix(".") && !name.isEmpty, "a staged name")
        try OutputDestination.checkKind(path(of: name))
        let temporary = (directory as NSString).appendingPathComponent(Self.temporaryName(of: name, tag: tag))
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw unwritable(name, errno) }
        files.append(StagedFile(name: name, temporaryPath: temporary, bytes: Int64(bytes.count)))
        defer { close(descriptor) }
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw unwritable(name, errno) }
            offset += count
        }
    }

    /// Moves every staged file to its name, each flushed to disk first (here rather than as it
    /// is written: a cancel is not held up by a slow disk). Checks each destination again
    /// first (something may have appeared there meanwhile).
    public func commit() throws(MediaError) -> [WrittenFile] {
        precondition(!finished)
        for file in files {
            let descriptor = open(file.temporaryPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard descriptor >= 0 else { throw unwritable(file.name, errno) }
            defer { close(descriptor) }
            guard fsync(descriptor) == 0 else { throw unwritable(file.name, errno) }
        }
        for file in files { try OutputDestination.checkKind(path(of: file.name)) }
        var written: [WrittenFile] = []
        for file in files {
            guard rename(file.temporaryPath, path(of: file.name)) == 0 else { throw unwritable(file.name, errno) }
            written.append(WrittenFile(name: file.name, path: path(of: file.name), bytes: file.bytes))
        }
        files.removeAll()
        created.removeAll()
        finished = true
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if descriptor >= 0 {
            fsync(descriptor)
            close(descriptor)
        }
        return written
    }

    /// Removes what was staged.
    public func discard() {
        removeTemporaries()
        finished = true
    }

    private func removeTemporaries() {
        for file in files { unlink(file.temporaryPath) }
        files.removeAll()
        // Only if still empty: something else may have been put there meanwhile.
        for directory in created.reversed() { rmdir(directory) }
        created.removeAll()
    }

    private func unwritable(_ name: String, _ code: Int32) -> MediaError {
        MediaError(.outputUnwritable, "cannot write \(path(of: name)): \(String(cString: strerror(code)))")
    }

    private static func reason(_ error: any Error) -> String {
        guard let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError else {
            return error.localizedDescription
        }
        return String(cString: strerror(Int32(underlying.code)))
    }
}
