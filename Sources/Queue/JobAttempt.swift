import Foundation
import JobctlCore

/// An attempt of a job that did not end it well: it failed, was queued again, was cancelled,
/// or was taken over by another worker after its lease ran out (the job itself shows its
/// current or last attempt).
public struct JobAttempt: Sendable, Hashable {
    public var attempt: Int
    public var worker: String?
    public var startedAt: Date?
    public var endedAt: Date
    /// `failed`, `cancelled`, `unknown` (queued again) or `taken over`.
    public var outcome: String
    public var errorCode: ErrorCode?
    public var errorMessage: String?

    public init(
        attempt: Int,
        worker: String?,
        startedAt: Date?,
        endedAt: Date,
        outcome: String,
        errorCode: ErrorCode?,
        errorMessage: String?
    ) {
        self.attempt = attempt
        self.worker = worker
        self.startedAt = startedAt.map { Date(milliseconds: $0.milliseconds) }
        self.endedAt = Date(milliseconds: endedAt.milliseconds)
        self.outcome = outcome
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }

    /// Taken over: how the trigger of both SQL stores words it.
    public static let takenOver = "taken over"
    public static func takeoverMessage(from worker: String?, to next: String?) -> String {
        "its worker \(worker ?? "?") stopped renewing the lease; \(next ?? "?") took the job over"
    }
}
