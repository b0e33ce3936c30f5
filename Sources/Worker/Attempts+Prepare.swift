import Foundation
import JobKinds
import JobctlCore
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
        options: WorkerOptions,
        sender: HTTPSender
    ) async throws
        -> any PreparedJob
    {
        let context = RunContext(
            lease: claimed.lease,
            inputRoot: options.inputRoot,
            outputRoot: options.outputRoot,
            stagingDirectory: options.stagingDirectory,
            limits: options.limits,
            sender: sender
        )
        return try await JobKinds.prepare(claimed.job, context: context)
    }

    /// What an error thrown by preparing, exporting or committing means for the attempt.
    static func outcome(of error: any Error) -> AttemptStateMachine.ExportOutcome {
        switch error {
        case let error as MediaError where error.isCancellation: .cancelled
        case let error as MediaError:
            .failed(
                JobError(code: error.code.errorCode, message: error.message, retryable: error.transient ? true : nil)
            )
        case let failure as JobError: .failed(failure)
        default: .failed(JobError(code: .internalError, message: "\(error)"))
        }
    }
}
