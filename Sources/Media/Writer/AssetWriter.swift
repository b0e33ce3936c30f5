import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

#if !os(Linux)
#error("jobctl runs on Linux only: this file needs /proc/self/fd and Glibc")
#endif

/// Writes a media file from samples appended to its inputs (`AVAssetWriter`).
///
/// Nobody ever sees a partial file at the destination: the writer writes a hidden temporary
/// file beside it (same directory, so the same file system) and, in `finishWriting()`, flushes
/// it to disk and renames it over the destination. A failed or cancelled writer deletes it.
///
/// Sendable: its configuration is immutable; status, the descriptor and whether it settled are
/// in `state` (a mutex); the muxer (`OutputFile`) locks itself.
public final class AssetWriter: @unchecked Sendable {
    public let destination: String
    public let format: ContainerFormat
    public private(set) var inputs: [AssetWriterInput] = []
    /// The temporary file written until `finishWriting()`.
    public let temporaryPath: String
    public let limits: ResourceLimits

    private let file: OutputFile
    private let state = Mutex(State())

    private struct State {
        var status: Status = .unknown
        /// `commit()` or `discard()` has run.
        var settled = false
        var error: MediaError?
        /// The temporary file, opened by us (`O_EXCL | O_NOFOLLOW`) and kept open: FFmpeg writes
        /// it through `/proc/self/fd/N`, so a name swapped for a link is never written through.
        var descriptor: Int32 = -1
    }

    /// Prepares a writer for `destination`. Fails with `output_unwritable` if its directory
    /// does not exist, and with `output_forbidden` if something other than a regular file is
    /// there (a device, a FIFO, a directory, a symbolic link: see `OutputDestination`).
    /// - Parameter temporaryTag: goes into the temporary file's name
    ///   (`.NAME.TAG.jobctl.tmp`) instead of a random token, so its owner can find leftovers.
    /// - Parameter limits: `maxOutputBytes` is enforced as packets are written.
    public init(
        destination: String,
        format: ContainerFormat,
        temporaryTag: String? = nil,
        limits: ResourceLimits = .default
    ) throws(MediaError) {
        self.destination = destination
        self.format = format
        self.limits = limits
        try OutputDestination.checkDirectory(of: destination)
        let token = temporaryTag ?? String(UInt64.random(in: 0...UInt64.max), radix: 36)
        temporaryPath = AssetWriter.temporaryPath(for: destination, tag: token)
        do {
            file = try OutputFile(path: temporaryPath, formatName: format.muxerName)
        } catch {
            throw MediaError(.internalError, "the \(format.muxerName) muxer is not available", detail: "\(error)")
        }
    }

    public var status: Status { state.withLock { $0.status } }
    public var error: MediaError? { state.withLock { $0.error } }

    /// Where the writer for `destination` with `tag` writes until it finishes.
    public static func temporaryPath(for destination: String, tag: String) -> String {
        let url = URL(fileURLWithPath: destination)
        let name = String(url.lastPathComponent.prefix(160))
        return (url.deletingLastPathComponent().path as NSString).appendingPathComponent(".\(name).\(tag).jobctl.tmp")
    }

    /// Adds an input: creates its encoder and output stream. Before `startWriting()`.
    /// Passthrough inputs need the `asset` they copy from.
    public func add(_ input: AssetWriterInput, copyingFrom asset: Asset? = nil) throws(MediaError) {
        precondition(status == .unknown, "inputs are added before writing starts")
        try input.attach(to: self, file: file, asset: asset)
        inputs.append(input)
    }

    /// Hands the inputs' packets to the muxer in the order of the reader's input (the samples'
    /// `sequence`, from a reader that `marksInputOrder`) rather than as their threads come, so
    /// that the file's bytes are the same on every run (`InputOrder`). Set before
    /// `startWriting()`.
    public var ordersByInput = false

    /// Creates the temporary file and writes the header.
    public func startWriting() throws(MediaError) {
        precondition(status == .unknown && !inputs.isEmpty)
        if ordersByInput { file.orderByInput(streams: inputs.count) }
        do {
            let descriptor = try createTemporaryFile()
            state.withLock { $0.descriptor = descriptor }
            // The inode we created, whatever its name points to by the time FFmpeg opens it.
            let pinned = "/proc/self/fd/\(descriptor)"
            try file.open(
                at: FileManager.default.fileExists(atPath: pinned) ? pinned : temporaryPath,
                options: ["movflags": "+faststart"]
            )
        } catch let error as FFError {
            file.abort()
            unlink(temporaryPath)
            closeDescriptor()
            // A full disk or an I/O error is the output's (retryable); a muxer refusing the
            // streams is the preset's.
            let mapped =
                error.operation.hasPrefix("avio_open") || error.isOutputIO
                ? AssetWriter.writeError(error, path: destination)
                : MediaError(
                    .presetIncompatible,
                    "the \(format.rawValue) container cannot hold these tracks: \(FFmpegLog.takeLastError() ?? error.description)"
                )
            state.withLock {
                $0.status = .failed
                $0.error = mapped
            }
            throw mapped
        } catch let error as MediaError {
            state.withLock {
                $0.status = .failed
                $0.error = error
            }
            throw error
        } catch {
            throw MediaError(.internalError, "\(error)")
        }
        state.withLock { $0.status = .reading }
        for input in inputs { input.setStatus(.reading) }
    }

    /// Writes the trailer, flushes the file to disk and renames it to the destination.
    /// Returns the file's size in bytes.
    @discardableResult
    public func finishWriting() throws(MediaError) -> Int64 {
        let bytes = try finishWritingWithoutCommit()
        try commit()
        return bytes
    }

    /// Writes the trailer and flushes the file to disk, but leaves it at `temporaryPath`:
    /// `commit()` then renames it into place, `discard()` deletes it. For callers that must
    /// check something (a job's lease) between "complete" and "visible".
    public func finishWritingWithoutCommit() throws(MediaError) -> Int64 {
        precondition(status == .reading, "finishWriting() after startWriting()")
        do throws(MediaError) {
            for input in inputs where input.status == .reading { try input.markAsFinished() }
            do {
                try file.finish()
            } catch let error as FFError where error.isOutputIO {
                throw AssetWriter.writeError(error, path: destination)
            } catch let error as FFError {
                throw MediaError(
                    .encodeFailed,
                    "\(destination): finishing the file failed: \(FFmpegLog.takeLastError() ?? FFError.message(for: error.code))",
                    detail: error.description
                )
            } catch {
                throw MediaError(.internalError, "\(error)")
            }
            try syncTemporaryFile()
        } catch {
            fail(error)
            throw error
        }
        state.withLock { $0.status = .completed }
        var info = stat()
        return fstat(state.withLock { $0.descriptor }, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Renames the finished temporary file over the destination and flushes the directory.
    /// What is at the destination is checked again first: only a regular file is ever replaced
    /// (`output_forbidden` otherwise, and the finished file is deleted); and the temporary name
    /// must still be the file this writer wrote.
    /// Once only: a second `commit()`, or a `discard()` after it, does nothing.
    public func commit() throws(MediaError) {
        precondition(status == .completed, "commit() after finishWritingWithoutCommit()")
        guard settle() else { return }
        do {
            try OutputDestination.checkKind(destination)
            try checkTemporaryFileIsOurs()
        } catch {
            removeTemporaryFile()
            throw error
        }
        defer { closeDescriptor() }
        guard rename(temporaryPath, destination) == 0 else {
            let error = AssetWriter.systemError(errno, path: destination)
            removeTemporaryFile()
            throw error
        }
        let directory = open(
            PathText.directory(of: destination),
            O_RDONLY
        )
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }

    /// Deletes the finished temporary file instead of committing it; after a `commit()` (or a
    /// first `discard()`), does nothing.
    public func discard() {
        guard settle() else { return }
        removeTemporaryFile()
    }

    /// Whether this is the first of `commit()` and `discard()`.
    private func settle() -> Bool {
        state.withLock { state in
            defer { state.settled = true }
            return !state.settled
        }
    }

    private func removeTemporaryFile() {
        unlink(temporaryPath)
        closeDescriptor()
    }

    deinit { closeDescriptor() }

    private func closeDescriptor() {
        let descriptor = state.withLock { state -> Int32 in
            defer { state.descriptor = -1 }
            return state.descriptor
        }
        if descriptor >= 0 { close(descriptor) }
    }

    /// `output_forbidden` unless the temporary name is still a regular file, the very one
    /// this writer created (someone with write access to the directory could swap it).
    private func checkTemporaryFileIsOurs() throws(MediaError) {
        let descriptor = state.withLock { $0.descriptor }
        var named = stat()
        var ours = stat()
        guard descriptor >= 0, fstat(descriptor, &ours) == 0, lstat(temporaryPath, &named) == 0,
            named.st_mode & S_IFMT == S_IFREG, named.st_dev == ours.st_dev, named.st_ino == ours.st_ino
        else {
            throw MediaError(
                .outputForbidden,
                "\(destination): its temporary file \(temporaryPath) was replaced while it was written; nothing was renamed"
            )
        }
    }

    /// Stops writing and deletes the temporary file. Safe from any thread, any number of times.
    public func cancelWriting() {
        let changed = state.withLock { state -> Bool in
            guard !state.status.isTerminal else { return false }
            state.status = .cancelled
            state.error = state.error ?? MediaError.cancelled()
            return true
        }
        if changed { discard(as: .cancelled) }
    }

    /// Records a failure and deletes the temporary file.
    func fail(_ error: MediaError) {
        let changed = state.withLock { state -> Bool in
            guard !state.status.isTerminal else { return false }
            state.status = .failed
            state.error = error
            return true
        }
        if changed { discard(as: .failed) }
    }

    private func discard(as status: Status) {
        for input in inputs { input.setStatus(status) }
        file.abort()
        unlink(temporaryPath)
        closeDescriptor()
    }

    /// Creates the temporary file exclusively and without following a symbolic link, so a link
    /// planted at its (predictable) name cannot redirect the write; returns its descriptor,
    /// which stays open until the file is renamed or deleted.
    private func createTemporaryFile() throws(MediaError) -> Int32 {
        for _ in 0..<2 {
            let descriptor = open(temporaryPath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            if descriptor >= 0 { return descriptor }
            guard errno == EEXIST else { throw AssetWriter.systemError(errno, path: destination) }
            // A leftover of an earlier attempt (or a planted link): removed, never followed.
            unlink(temporaryPath)
        }
        throw MediaError(.outputUnwritable, "\(destination): its temporary file \(temporaryPath) keeps reappearing")
    }

    /// Flushes the file this writer created to disk (through its own descriptor, not the name).
    private func syncTemporaryFile() throws(MediaError) {
        let descriptor = state.withLock { $0.descriptor }
        guard descriptor >= 0 else {
            throw MediaError(.internalError, "\(destination): the temporary file is not open")
        }
        if fsync(descriptor) != 0 { throw AssetWriter.systemError(errno, path: destination) }
    }

    static func systemError(_ code: Int32, path: String) -> MediaError {
        MediaError(.outputUnwritable, "\(path) cannot be written: \(String(cString: strerror(code)))")
    }

    /// `output_unwritable` for a failure of the output's file system or device.
    static func writeError(_ error: FFError, path: String) -> MediaError {
        switch error.code {
        case AVErr.noSpace:
            return MediaError(
                .outputUnwritable,
                "\(path) cannot be written: no space left on the device",
                detail: error.description
            )
        case cff_averror_errno(EDQUOT):
            return MediaError(
                .outputUnwritable,
                "\(path) cannot be written: the disk quota is exhausted",
                detail: error.description
            )
        case AVErr.accessDenied:
            return MediaError(
                .outputUnwritable,
                "\(path) cannot be written: permission denied",
                detail: error.description
            )
        case AVErr.noEntry:
            return MediaError(
                .outputUnwritable,
                "\(path) cannot be written: its directory does not exist",
                detail: error.description
            )
        default:
            return MediaError(
                .outputUnwritable,
                "\(path) cannot be written: \(FFError.message(for: error.code))",
                detail: error.description
            )
        }
    }
}
