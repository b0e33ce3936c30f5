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
/// temporaries are removed, and the directories this created if they are still empty, so
/// nothing appears under the final names.
///
/// The directory is opened once (`O_DIRECTORY | O_NOFOLLOW`) and every file is created,
/// checked, renamed and removed relative to that descriptor: swapping the directory for a
/// symbolic link afterwards cannot send the files elsewhere. `resolvedDirectory` says where it
/// really is, for a caller that confines outputs to a root.
///
/// Names are ours (`thumb-001.jpg`), never a user's: a name with a `/` or a leading `.` is a
/// programming error. What already exists under a final name is replaced only if it is a
/// regular file (the same rule as an export's output).
public final class StagedFiles {
    public let directory: String
    private var descriptor: Int32 = -1
    private var files: [StagedFile] = []
    private var finished = false
    private let tag: String
    /// Directories this created itself (deepest last): removed again, if still empty, when
    /// nothing is committed.
    private var created: [String] = []
    /// What the set may write in all (`--max-output-size` applies to a whole set); shared by
    /// the `StagedFiles` of one set that spans directories. `nil`: no limit.
    public var budget: OutputBudget?
    /// When set, the directory holds one set of a kind, whose files this recognises by name
    /// (`thumb-004.jpg`): committing also removes the regular files of that kind the new set
    /// does not have, so a rerun with fewer files never leaves a mix of two runs. Other files
    /// are never touched.
    public var replacesSet: (@Sendable (String) -> Bool)?

    /// A file written and not yet shown under its name.
    public struct StagedFile: Sendable, Hashable {
        public var name: String
        /// Where it waits: `.NAME.TAG.jobctl.tmp` in the directory.
        public var temporaryPath: String
        public var bytes: Int64
        /// When it is shown, relative to the set's other files.
        public var rank: PublishRank = .content
    }

    /// When a file of a set is shown (renamed into place, or uploaded), relative to the
    /// others: every file of an earlier rank before any of a later one; within a rank, in the
    /// order written. A reader that finds an index (a playlist) finds what it names; one that
    /// finds the entry point (`master.m3u8`, a storyboard's description) finds the whole set.
    public enum PublishRank: Int, Sendable, Hashable, Comparable {
        /// Media and pictures: named by the others.
        case content
        /// Files that name content (a rendition's playlist, WebVTT cues, a player page).
        case index
        /// The file a reader starts from, shown last.
        case entryPoint

        public static func < (a: PublishRank, b: PublishRank) -> Bool { a.rawValue < b.rawValue }
    }

    /// Creates `directory` (and its parents) if missing, and opens it. `output_forbidden` if it
    /// is something other than a directory (a symbolic link included); `output_unwritable` if
    /// it cannot be created. `tag` names the temporaries (a job's `JOBID-ATTEMPT-TOKEN`, so a later
    /// attempt finds what a killed one left); random by default.
    public init(directory: String, tag: String? = nil) throws(MediaError) {
        self.directory = directory
        self.tag = tag ?? String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try openDirectory()
    }

    deinit {
        removeTemporaries()
        if descriptor >= 0 { close(descriptor) }
    }

    /// Creates what is missing of the directory (recording what this created) and opens it.
    private func openDirectory() throws(MediaError) {
        var missing: [String] = []
        var path = (directory as NSString).standardizingPath
        var info = stat()
        while !path.isEmpty && path != "/" && path != "." && lstat(path, &info) != 0 {
            missing.insert(path, at: 0)
            path = PathText.parent(of: path)
        }
        for component in missing {
            if mkdir(component, 0o755) == 0 {
                created.append(component)
            } else if errno != EEXIST {
                throw MediaError(
                    .outputUnwritable,
                    "cannot create the output directory \(directory): \(String(cString: strerror(errno)))"
                )
            }
        }
        // Without its trailing slashes: `link/` would make the kernel follow the link, whatever
        // O_NOFOLLOW says.
        var unslashed = directory
        while unslashed.count > 1 && unslashed.hasSuffix("/") { unslashed.removeLast() }
        let opened = open(unslashed, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard opened >= 0 else {
            let code = errno
            if code == ENOTDIR || code == ELOOP {
                throw MediaError(
                    .outputForbidden,
                    "\(directory) exists and is not a directory (a symbolic link is refused too): the files go into a directory"
                )
            }
            throw MediaError(
                .outputUnwritable,
                "cannot open the output directory \(directory): \(String(cString: strerror(code)))"
            )
        }
        if descriptor >= 0 { close(descriptor) }
        descriptor = opened
    }

    /// The directory's real path, through its descriptor (where the files really go).
    public var resolvedDirectory: String? {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)"))
    }

    /// What is staged so far, in the order it is shown: by rank, then as written.
    public var staged: [StagedFile] {
        files.enumerated().sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }.map(\.element)
    }

    /// The temporary name `name` is staged under with `tag`.
    public static func temporaryName(of name: String, tag: String) -> String { ".\(name).\(tag).jobctl.tmp" }

    /// Removes the temporaries in `directory` whose tag starts with `tagPrefix` (what earlier,
    /// killed attempts of a job left). Does not follow a symbolic link at `directory`.
    public static func removeLeftovers(in directory: String, tagPrefix: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd/\(descriptor)")
        else { return }
        for entry in entries where entry.hasPrefix(".") && entry.hasSuffix(".jobctl.tmp") {
            let tag = entry.dropLast(".jobctl.tmp".count).split(separator: ".").last ?? ""
            if tag.hasPrefix(tagPrefix) { unlinkat(descriptor, entry, 0) }
        }
    }

    /// The final path of `name`.
    public func path(of name: String) -> String { (directory as NSString).appendingPathComponent(name) }

    /// Where `name` waits, reached through the opened directory (`/proc/self/fd/N/…`), for a
    /// writer that creates its files itself (FFmpeg's segmenting muxer) and is then
    /// `adopt(_:)`ed. `name` may be a pattern (`720p-%05d.m4s`): the tag holds no `%`.
    public func pinnedTemporaryPath(of name: String) -> String {
        "/proc/self/fd/\(descriptor)/" + Self.temporaryName(of: name, tag: tag)
    }

    /// The directory as the opened descriptor reaches it (`/proc/self/fd/N`).
    public var pinnedDirectory: String { "/proc/self/fd/\(descriptor)" }

    /// The name `name` waits under, relative to the directory.
    public func temporaryName(of name: String) -> String { Self.temporaryName(of: name, tag: tag) }

    /// Takes into the set a file someone else wrote at `pinnedTemporaryPath(of: name)`: it is
    /// shown under `name` by `commit()`, in the order of `write`s and adoptions. Counted
    /// against the budget now. `output_unwritable` if it is missing, `output_forbidden` if it
    /// is not a regular file.
    public func adopt(_ name: String, rank: PublishRank = .content) throws(MediaError) {
        precondition(!finished && !name.contains("/") && !name.hasPrefix(".") && !name.isEmpty, "a staged name")
        let temporaryName = Self.temporaryName(of: name, tag: tag)
        var info = stat()
        guard fstatat(descriptor, temporaryName, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw unwritable(name, errno)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw MediaError(.outputForbidden, "\(path(of: name)): its temporary file was replaced by something else")
        }
        if let budget { try budget.spend(Int(info.st_size), writing: path(of: name)) }
        files.append(
            StagedFile(
                name: name,
                temporaryPath: (directory as NSString).appendingPathComponent(temporaryName),
                bytes: Int64(info.st_size),
                rank: rank
            )
        )
    }

    /// Removes every temporary of this set in the directory, adopted or not (what a writer that
    /// creates its own files left when it failed).
    public func removeUnadoptedTemporaries() {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd/\(descriptor)")
        else { return }
        let adopted = Set(files.map { Self.temporaryName(of: $0.name, tag: tag) })
        for entry in entries where entry.hasSuffix(".\(tag).jobctl.tmp") && !adopted.contains(entry) {
            unlinkat(descriptor, entry, 0)
        }
    }

    /// Writes `bytes` as `name` (staged: not visible under `name` until `commit()`), shown
    /// at `rank`.
    public func write(_ name: String, _ bytes: [UInt8], rank: PublishRank = .content) throws(MediaError) {
        try write(name, rank: rank) { chunk throws(MediaError) in try chunk(bytes) }
    }

    /// Writes `name` from pieces: `produce` hands each to the writer it is given, so a large
    /// file need not be whole in memory (staged as `write(_:_:)` is).
    public func write(
        _ name: String,
        rank: PublishRank = .content,
        producing produce: (_ write: ([UInt8]) throws(MediaError) -> Void) throws(MediaError) -> Void
    ) throws(MediaError) {
        precondition(!finished && !name.contains("/") && !name.hasPrefix(".") && !name.isEmpty, "a staged name")
        try OutputDestination.checkKind(in: descriptor, name: name, shownAs: path(of: name))
        let temporaryName = Self.temporaryName(of: name, tag: tag)
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW
        var file = openat(descriptor, temporaryName, flags, 0o644)
        if file < 0 && errno == ENOENT {
            // The directory went away (another writer's failed set removed it while empty).
            try openDirectory()
            file = openat(descriptor, temporaryName, flags, 0o644)
        }
        guard file >= 0 else { throw unwritable(name, errno) }
        defer { close(file) }
        files.append(
            StagedFile(
                name: name,
                temporaryPath: (directory as NSString).appendingPathComponent(temporaryName),
                bytes: 0,
                rank: rank
            )
        )
        let entry = files.count - 1
        try produce { bytes throws(MediaError) in
            if let budget { try budget.check(bytes.count, writing: path(of: name)) }
            var offset = 0
            while offset < bytes.count {
                let count = bytes[offset...].withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw unwritable(name, errno) }
                offset += count
            }
            if let budget { try budget.spend(bytes.count, writing: path(of: name)) }
            files[entry].bytes += Int64(bytes.count)
        }
    }

    /// Moves every staged file to its name, in the order shown (`staged`), each flushed to disk first (here rather than as it
    /// is written: a cancel is not held up by a slow disk). Checks each destination again
    /// first (something may have appeared there meanwhile). Should a rename fail, the files
    /// already moved are removed again: the set stays all or none.
    public func commit() throws(MediaError) -> [WrittenFile] {
        precondition(!finished)
        // One set at a time shows its files in a directory: two runs into the same directory
        // each land whole, one after the other, rather than interleaved.
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        defer { flock(descriptor, LOCK_UN) }
        for file in files {
            let handle = openat(
                descriptor,
                Self.temporaryName(of: file.name, tag: tag),
                O_RDONLY | O_CLOEXEC | O_NOFOLLOW
            )
            guard handle >= 0 else { throw unwritable(file.name, errno) }
            defer { close(handle) }
            guard fsync(handle) == 0 else { throw unwritable(file.name, errno) }
        }
        for file in files {
            try OutputDestination.checkKind(in: descriptor, name: file.name, shownAs: path(of: file.name))
        }
        var written: [WrittenFile] = []
        for file in staged {
            let temporaryName = Self.temporaryName(of: file.name, tag: tag)
            guard renameat(descriptor, temporaryName, descriptor, file.name) == 0 else {
                let failure = unwritable(file.name, errno)
                for done in written { unlinkat(descriptor, done.name, 0) }
                throw failure
            }
            written.append(WrittenFile(name: file.name, path: path(of: file.name), bytes: file.bytes))
        }
        if let isOfTheSet = replacesSet { removeEarlierSet(keeping: Set(written.map(\.name)), isOfTheSet) }
        files.removeAll()
        created.removeAll()
        finished = true
        fsync(descriptor)
        return written
    }

    /// Removes the regular files of the set's kind that `kept` does not name.
    private func removeEarlierSet(keeping kept: Set<String>, _ isOfTheSet: (String) -> Bool) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd/\(descriptor)") else {
            return
        }
        for name in names where isOfTheSet(name) && !kept.contains(name) {
            var info = stat()
            guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else {
                continue
            }
            unlinkat(descriptor, name, 0)
        }
    }

    /// Removes what was staged.
    public func discard() {
        removeTemporaries()
        finished = true
    }

    private func removeTemporaries() {
        for file in files { unlinkat(descriptor, Self.temporaryName(of: file.name, tag: tag), 0) }
        files.removeAll()
        // Only if still empty: something else may have been put there meanwhile.
        for directory in created.reversed() { rmdir(directory) }
        created.removeAll()
    }

    private func unwritable(_ name: String, _ code: Int32) -> MediaError {
        MediaError(.outputUnwritable, "cannot write \(path(of: name)): \(String(cString: strerror(code)))")
    }
}

/// The bytes a set of files may still write: `--max-output-size` (`ResourceLimits.maxOutputBytes`)
/// for thumbnails, storyboards and waveforms, counted over the whole set as it is written.
public final class OutputBudget {
    public let limit: Int64
    public private(set) var used: Int64 = 0

    public init(limit: Int64) { self.limit = limit }

    /// `limit_exceeded` if `count` more bytes would pass the limit (nothing is written then).
    func check(_ count: Int, writing path: String) throws(MediaError) {
        guard used + Int64(count) > limit else { return }
        throw MediaError(
            .limitExceeded,
            "the set of files would be larger than \(limit) bytes, the limit on output size (--max-output-size, JOBCTL_MAX_OUTPUT_SIZE), at \(path) with \(used) bytes written so far"
        )
    }

    func spend(_ count: Int, writing path: String) throws(MediaError) {
        try check(count, writing: path)
        used += Int64(count)
    }
}
