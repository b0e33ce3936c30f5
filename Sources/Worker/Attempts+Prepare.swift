import Foundation
import JobKinds
import JobctlCore
import Logging
import Media
import Queue
import SafeHTTP

/// Preparing an attempt's work by kind, what an error means for it, and discarding an output.
extension Attempts {
    /// Deletes a held output (a large file, or a set of them) on a thread of its own, not on an
    /// event loop where database connections wait.
    static func discard(_ held: any HeldOutput) async {
        _ = try? await onDedicatedThread("jobctl.discard") { held.discard() }
    }

    /// Opens the job's input and builds its work: the kind's, looked up by name (`JobKinds`).
    static func prepare(
        _ claimed: ClaimedJob,
        store: any JobStore,
        options: WorkerOptions,
        sender: HTTPSender
    ) async throws
        -> any PreparedJob
    {
        // A graph's join reads its children (issue 27).
        var children: [Job] = []
        if let total = claimed.job.children?.total, total > 0 {
            children = try await store.jobs(JobQuery(parent: claimed.job.id, limit: total))
                .sorted { ($0.childIndex ?? 0) < ($1.childIndex ?? 0) }
        }
        // A split (of `auto`, the kind decides) needs more than one worker alive.
        var aliveWorkers = 1
        if claimed.job.role.split != nil, claimed.job.children == nil {
            let recent = Date().addingTimeInterval(-60)
            aliveWorkers =
                (try? await store.workers().filter { $0.stoppedAt == nil && $0.heartbeatAt > recent }.count) ?? 1
        }
        let context = RunContext(
            lease: claimed.lease,
            inputRoot: options.inputRoot,
            outputRoot: options.outputRoot,
            stagingDirectory: options.stagingDirectory,
            limits: options.limits,
            sender: sender,
            children: children,
            scratchDirectory: options.scratchDirectory,
            aliveWorkers: aliveWorkers,
            objectStore: options.objectStore,
            objectRoot: options.objectRoot
        )
        return try await JobKinds.prepare(claimed.job, context: context)
    }

    /// A graph parent's first attempt: its children handed to the store, which creates them and
    /// takes the lease back in one fenced transaction. Refused (nothing created), the lease was
    /// lost or the job cancelled: the store's answer to a renewal says which.
    func fanOut(
        _ children: [JobRequest],
        _ execution: Execution,
        logger: Logger
    ) async throws -> AttemptStateMachine.ExportOutcome {
        let lease = execution.claimed.lease
        Failpoints.hit("before-fan-out", logger: logger)
        if let ids = try await store.fanOut(lease, children: children) {
            logger.info("Job fanned out", metadata: ["job.children": "\(ids.count)"])
            return .fannedOut
        }
        switch try await store.heartbeat(lease, progress: 0, tracks: [], extendBy: options.lease) {
        case .lost: execution.stop(.leaseLost)
        case .held(cancelRequested: true): execution.stop(.cancelRequested)
        case .held(cancelRequested: false):
            throw JobError(code: .internalError, message: "the store refused the job's fan-out", retryable: false)
        }
        return .cancelled
    }

    /// What an error thrown by preparing, exporting or committing means for the attempt.
    static func outcome(of error: any Error) -> AttemptStateMachine.ExportOutcome {
        switch error {
        case let error as MediaError where error.isCancellation: .cancelled
        case let error as MediaError:
            .failed(
                JobError(code: error.code, message: error.message, retryable: error.transient ? true : nil)
            )
        case let failure as JobError: .failed(failure)
        default: .failed(JobError(code: .internalError, message: "\(error)"))
        }
    }
}
