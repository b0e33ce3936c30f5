import Foundation
import JobctlCore
import Media
import Queue
import Synchronization

extension Lease {
    /// The tag of this attempt's temporary files (`.NAME.TAG.jobctl.tmp`): the job, the attempt
    /// and the start of the lease token. Unique per claim, not per attempt number: a job handed
    /// back is claimed again under the same number, and the worker that handed it back may
    /// delete its temporary file (by name) a moment after the new owner created one.
    package var temporaryTag: String {
        "\(jobID)-\(attempt)-\(String(token.filter { $0.isLetter || $0.isNumber }.prefix(8)))"
    }
}

/// A claimed job made ready to run: an export (`ExportJob`), or thumbnails, a storyboard or a
/// waveform (`FileSetJob`). The attempt runs it, then shows its outputs — renamed into place or
/// uploaded — only once the fence says this worker still holds the job.
public protocol PreparedJob: Sendable {
    /// 0…1, for the job table.
    var progress: Double { get }
    /// Per-track counters for the job table (empty for kinds without tracks).
    var tracks: [JobTrack] { get }
    /// Where the outputs go when they are uploaded (the job's output URL); `nil` for a local
    /// output, which is renamed into place instead.
    var uploadURL: String? { get }
    /// Stops the running work soon; `run()` then throws a cancellation.
    func cancel()
    /// Does the work, holding its outputs back (hidden temporaries).
    func run() async throws -> FinishedRun
    /// The children this attempt creates instead of running (a graph's parent, issue 27):
    /// the worker hands them to the store's `fanOut`; `nil` for work that runs.
    var fanOut: [JobRequest]? { get }
}

extension PreparedJob {
    public var fanOut: [JobRequest]? { nil }
}

/// What a run produced: outputs held back, and the result the job will report.
public struct FinishedRun: Sendable {
    package let held: any HeldOutput
    /// Seconds of media processed (the worker's throughput metric); `nil` when not measured.
    package let mediaSeconds: Double?
    /// The job's `result`, given the bytes uploaded per file name (`nil`: committed locally).
    package let result: @Sendable (_ uploaded: [String: Int64]?) -> JSONValue
}

/// Finished outputs not yet visible: renamed into place (`commit()`), or uploaded from where
/// they wait then `discard()`ed. Dropped without either, they are deleted.
public protocol HeldOutput: AnyObject, Sendable {
    /// Each file with where it is PUT for a remote output.
    var uploads: [HeldUpload] { get }
    func commit() throws
    func discard()
    /// Called once the output is shown (renamed into place, or uploaded) and the store has
    /// recorded the job's completion (blocking work allowed): what the output no longer needs
    /// can go (a split's parts).
    func published()
}

extension HeldOutput {
    public func published() {}
}

/// One held file with where it goes for a remote output, and when it goes, relative to the
/// others of its set (`OutputPublisher` sends a set by rank, then as listed).
public struct HeldUpload: Sendable, Hashable {
    /// The file's name in the result (`""` for an export's one file).
    public let name: String
    public let path: String
    public let url: String
    public let contentType: String
    public let rank: StagedFiles.PublishRank

    package init(
        name: String,
        path: String,
        url: String,
        contentType: String,
        rank: StagedFiles.PublishRank = .content
    ) {
        self.name = name
        self.path = path
        self.url = url
        self.contentType = contentType
        self.rank = rank
    }
}

/// An export's one finished file.
final class HeldExport: HeldOutput {
    private let pending: Mutex<PendingOutput?>
    let uploads: [HeldUpload]
    /// Where the finished file waits.
    let temporaryPath: String
    /// A directory of the job's own that goes once the output is published.
    let removingWhenPublished: String?

    init(
        _ pending: consuming PendingOutput,
        uploadURL: String?,
        contentType: String,
        removingWhenPublished: String? = nil
    ) {
        temporaryPath = pending.temporaryPath
        self.removingWhenPublished = removingWhenPublished
        uploads =
            uploadURL.map { [HeldUpload(name: "", path: pending.temporaryPath, url: $0, contentType: contentType)] }
            ?? []
        self.pending = Mutex(pending)
    }

    func commit() throws {
        let output = pending.withLock { $0.take() }
        try output?.commit()
    }

    func discard() {
        let output = pending.withLock { $0.take() }
        output?.discard()
        if let directory = removingWhenPublished { try? FileManager.default.removeItem(atPath: directory) }
    }

    func published() {
        if let directory = removingWhenPublished { try? FileManager.default.removeItem(atPath: directory) }
    }
}

/// A set of files staged in a directory (the output directory, or the staging directory before
/// an upload).
final class HeldFiles: HeldOutput, @unchecked Sendable {
    // Taken once, under the lock: committed or discarded, never both.
    private let files: Mutex<StagedFiles?>
    let staged: [StagedFiles.StagedFile]
    let uploads: [HeldUpload]
    /// Runs once the set is shown and the job's completion recorded (a ladder's join removes
    /// its chunks from the scratch directory).
    var afterPublished: (@Sendable () -> Void)?

    init(_ files: sending StagedFiles, uploadTemplate: String?) {
        let staged = files.staged
        self.staged = staged
        uploads =
            uploadTemplate.map { template in
                staged.map {
                    HeldUpload(
                        name: $0.name,
                        path: $0.temporaryPath,
                        url: FileSetJob.url(of: $0.name, in: template),
                        contentType: ContentType.upload($0.name),
                        rank: $0.rank
                    )
                }
            } ?? []
        self.files = Mutex(files)
    }

    func commit() throws {
        let taken = files.withLock { $0.take() }
        _ = try taken?.commit()
    }

    func discard() {
        let taken = files.withLock { $0.take() }
        taken?.discard()
    }

    func published() { afterPublished?() }
}

extension Job {
    /// The kind's options as they were stored at submission, read as `Options`. A stored value
    /// that does not fit is `database_corrupt` naming the job (changed outside jobctl, or by an
    /// incompatible version), never a default: not retried, another attempt would read the same.
    package func storedOptions<Options: Decodable>(as type: Options.Type = Options.self) throws(JobError) -> Options {
        do {
            return try presetSettings.decoded(as: Options.self)
        } catch {
            throw JobError(
                code: .databaseCorrupt,
                message:
                    "job \(id): the \(kind) options stored with it cannot be read (\(error)); the row was changed outside jobctl or by an incompatible version",
                retryable: false
            )
        }
    }
}

extension JSONValue {
    /// A job's result (or a kind's part of it) as JSON; one that cannot be (a non-finite
    /// number) is a bug, reported as `internal`.
    public static func result(_ value: some Encodable) throws(JobError) -> JSONValue {
        do {
            return try JSONValue(encoding: value)
        } catch {
            throw JobError.unstorableResult(error)
        }
    }
}

extension JobError {
    /// A result that cannot be stored as JSON (a non-finite number): a bug, reported as one.
    static func unstorableResult(_ error: any Error) -> JobError {
        JobError(code: .internalError, message: "the job's result could not be stored as JSON (\(error))")
    }
}
