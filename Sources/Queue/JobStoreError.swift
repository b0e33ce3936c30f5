import Foundation
import JobctlCore

/// Errors of the store API itself (not of jobs), in the one error shape (`CodedError`).
public struct JobStoreError: CodedError, Sendable {
    /// What went wrong, in the one vocabulary: `not_found`, `conflict`, `database_unavailable`
    /// (the database cannot be opened or used), `database_corrupt` (a damaged file or row),
    /// `usage` (a malformed location). The CLI prints it (`error: database_unavailable: …`) and
    /// exits with its exit status.
    public var code: ErrorCode
    public var message: String
    /// The status that made a `conflict`.
    public var status: JobStatus?
    /// The database driver's error underneath, if any.
    public var cause: (any Error)?
    public var location: ErrorLocation

    public init(
        _ code: ErrorCode,
        _ message: String,
        status: JobStatus? = nil,
        cause: (any Error)? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.cause = cause
        self.location = ErrorLocation(file: file, line: line)
    }
}

extension JobStoreError {
    /// No job has `id`.
    public static func noJob(_ id: JobID, file: String = #fileID, line: Int = #line) -> JobStoreError {
        JobStoreError(.notFound, "no job \(id)", file: file, line: line)
    }

    /// `cancel` of a job that has ended.
    public static func alreadyEnded(
        _ id: JobID,
        _ status: JobStatus,
        file: String = #fileID,
        line: Int = #line
    ) -> JobStoreError {
        JobStoreError(
            .conflict,
            "job \(id) has already ended (\(status)); nothing to cancel",
            status: status,
            file: file,
            line: line
        )
    }

    /// `retry` without `force` of a poison job (`JobStateMachine`, "Poison jobs").
    /// A fan-out into no children, or more than a parent may have.
    public static func childCount(_ count: Int, file: String = #fileID, line: Int = #line) -> JobStoreError? {
        guard !(1...JobGraphStateMachine.maximumChildren).contains(count) else { return nil }
        return JobStoreError(
            .conflict,
            "a job fans out into 1 to \(JobGraphStateMachine.maximumChildren) children, not \(count)",
            file: file,
            line: line
        )
    }

    /// A retry of a parent whose children are still stopping (a cancel on its way to them).
    public static func childrenStopping(_ id: JobID, file: String = #fileID, line: Int = #line) -> JobStoreError {
        JobStoreError(
            .conflict,
            "job \(id)'s children are still stopping: retry it once they have (a few seconds)",
            file: file,
            line: line
        )
    }

    /// A retry of a child: its parent's retry runs the children that did not complete.
    public static func childRetry(
        _ id: JobID,
        parent: JobID,
        file: String = #fileID,
        line: Int = #line
    ) -> JobStoreError {
        JobStoreError(
            .conflict,
            "job \(id) is part of job \(parent): retry \(parent), which runs again its children that did not complete",
            file: file,
            line: line
        )
    }

    public static func poisoned(_ id: JobID, file: String = #fileID, line: Int = #line) -> JobStoreError {
        JobStoreError(
            .conflict,
            "job \(id) is a poison job: its workers died on \(JobStateMachine.crashLimit) attempts (worker_crashed); run it again with --force once the cause is fixed",
            status: .failed,
            file: file,
            line: line
        )
    }

    /// Why a job whose lease expired failed, by `JobStateMachine`'s decision: `worker_crashed`
    /// when that made it a poison job, else `lease_lost` (its last attempt).
    public static func leaseExpiryError(poisoned: Bool, worker: String?, attempt: Int, of maxAttempts: Int) -> JobError
    {
        poisoned
            ? JobError(
                code: .workerCrashed,
                message: JobError.workerCrashedMessage(worker: worker ?? "?"),
                retryable: false
            )
            : JobError(
                code: .leaseLost,
                message:
                    "its worker \(worker ?? "?") stopped renewing the lease on attempt \(attempt) of \(maxAttempts)",
                retryable: true
            )
    }

    /// `retry` of a job that is not failed or cancelled.
    public static func notRetryable(
        _ id: JobID,
        _ status: JobStatus,
        file: String = #fileID,
        line: Int = #line
    ) -> JobStoreError {
        JobStoreError(
            .conflict,
            "job \(id) is \(status); only failed or cancelled jobs can be retried",
            status: status,
            file: file,
            line: line
        )
    }
}
