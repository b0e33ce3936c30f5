import Foundation
import JobKinds
import JobctlCore
import Logging
import ObjectStorage
import Queue
import SafeHTTP

/// How one job's finished outputs become visible, chosen once per attempt from where they go:
/// renamed into place (a local path), PUT over HTTP (`http(s)://`), or written to the object
/// store (`s3://`, with the client of the worker's configuration). It owns what differs by
/// destination — sending one file, and describing how a send failed — and what must not: the
/// order a set goes out in (`ordered(_:)`, by `PublishRank`), and the one decision between
/// another try, a failure and a stop (`outcome(of:tries:retryDelays:)`). Content types are the
/// held files' own (`ContentType.upload`, set when they are held).
///
/// The worker's upload loop asks it for the order and sends each file through it, and never
/// looks at the scheme itself.
///
/// A local output is not sent file by file: its held files are committed together
/// (`HeldOutput.commit()`: fsync, then renames in `PublishRank` order under the directory's
/// lock, undone should one fail), after one fence. `commit(_:)` is that, and nothing more
/// (decision 179).
struct OutputPublisher: Sendable {
    /// Where the outputs go, and with what.
    enum Transport: Sendable {
        /// A local path: the held files are renamed into place.
        case rename
        /// `http(s)://`: each file PUT through the guarded sender.
        case httpPut(HTTPSender)
        /// `s3://`: each file published by `ObjectUpload` with the provider's client.
        case objectStore(S3ClientProvider)
    }

    let transport: Transport
    /// A file whose send failed for a passing reason is tried again after each of these.
    let retryDelays: [Duration]

    /// The publisher for outputs going to `location`, a job's upload URL (`nil`: a local
    /// output, renamed into place).
    init(for location: String?, sender: HTTPSender, objectStore: S3ClientProvider, retryDelays: [Duration]) {
        switch location {
        case .none: transport = .rename
        case .some(let url) where MediaLocation.isObjectStore(url): transport = .objectStore(objectStore)
        case .some: transport = .httpPut(sender)
        }
        self.retryDelays = retryDelays
    }

    /// How the attempt's state machine is to show the outputs.
    var delivery: AttemptStateMachine.Delivery {
        switch transport {
        case .rename: .rename
        case .httpPut, .objectStore: .upload
        }
    }

    /// `files` in the order they are sent: by rank (content, indexes, the entry point last),
    /// then as listed.
    static func ordered(_ files: [HeldUpload]) -> [HeldUpload] {
        files.enumerated().sorted { ($0.element.rank, $0.offset) < ($1.element.rank, $1.offset) }.map(\.element)
    }

    /// Shows a local output: every held file renamed into place, off the event loops.
    func commit(_ held: any HeldOutput) async throws {
        try await onDedicatedThread("jobctl.commit") { try held.commit() }
    }

    /// Sends `file`, try number `tries` (from 0) of it, and decides what came of it.
    func send(_ file: HeldUpload, tries: Int, for attempt: PublishingAttempt) async -> PublishOutcome {
        let sent: SendResult
        switch transport {
        case .rename:
            return .failed(JobError(code: .internalError, message: "a local output is renamed into place, not sent"))
        case .httpPut(let sender):
            sent = await put(file, sender: sender, for: attempt)
        case .objectStore(let clients):
            sent = await putObject(file, clients: clients, for: attempt)
        }
        return Self.outcome(of: sent, tries: tries, retryDelays: retryDelays)
    }
}

/// What a publisher needs from the attempt it sends files for.
struct PublishingAttempt: Sendable {
    /// The attempt's claim: which job and attempt wrote a file (headers, object metadata).
    let lease: Lease
    /// Asked before every chunk of a transfer and at least once a second: stop (cancelled, the
    /// lease lost, or its local deadline passed without a renewal).
    let shouldStop: @Sendable () -> Bool
    /// The fence, asked just before an object store write makes a file visible: whether the
    /// worker still holds the attempt, in time, and it was not cancelled.
    let confirm: @Sendable () async -> Bool
    /// Where the job records its multipart uploads between attempts.
    let journal: UploadJournal
    let logger: Logger
}

/// What sending one file came to.
enum PublishOutcome: Sendable, Hashable {
    case published(bytes: Int64)
    /// Worth another try after `delay`; `what` went wrong, for the log.
    case retry(after: Duration, what: String)
    case failed(JobError)
    /// The attempt said stop (cancelled, or the lease may be lost).
    case stopped
}
