import Foundation

/// A signed-in dashboard session (issue 30, docs/dashboard.md). The browser holds a random
/// session id in a cookie; the store keeps only its SHA-256, as it does for API keys, with the
/// key it was opened with and the token every form of the session carries (CSRF).
public struct DashboardSession: Sendable, Hashable {
    /// Lowercase hex SHA-256 of the cookie's id.
    public var idHash: String
    /// The API key signed in with: its scope and tenancy are the session's, and revoking it
    /// ends the session.
    public var keyID: String
    /// The token each of the session's forms carries; an action without it is refused.
    public var csrfToken: String
    public var createdAt: Date
    public var expiresAt: Date

    public init(idHash: String, keyID: String, csrfToken: String, createdAt: Date, expiresAt: Date) {
        self.idHash = idHash
        self.keyID = keyID
        self.csrfToken = csrfToken
        self.createdAt = Date(milliseconds: createdAt.milliseconds)
        self.expiresAt = Date(milliseconds: expiresAt.milliseconds)
    }
}

/// Who did what from the dashboard: one row per action on a job (cancel, retry, redeliver),
/// bulk actions included, kept with the job database.
public struct AuditRecord: Sendable, Hashable {
    public var at: Date
    /// The API key whose session acted.
    public var keyID: String
    /// `cancel`, `retry`, `redeliver`.
    public var action: String
    public var jobID: JobID
    /// What came of it (`cancelled`, `requested`, `refused: …`).
    public var outcome: String

    public init(at: Date, keyID: String, action: String, jobID: JobID, outcome: String) {
        self.at = Date(milliseconds: at.milliseconds)
        self.keyID = keyID
        self.action = action
        self.jobID = jobID
        self.outcome = outcome
    }
}

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
    public var errorCode: String?
    public var errorMessage: String?

    public init(
        attempt: Int,
        worker: String?,
        startedAt: Date?,
        endedAt: Date,
        outcome: String,
        errorCode: String?,
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

/// Where dashboard sessions and the audit trail live: the job database, so that every
/// `jobctl serve` behind one load balancer knows the same sessions.
public protocol DashboardStore: Sendable {
    /// Stores a new session, and removes every session that has expired by `session.createdAt`
    /// (the table stays as large as the sessions alive).
    func createSession(_ session: DashboardSession) async throws
    /// The session with this id hash, if it has not expired at `now`.
    func session(idHash: String, at now: Date) async throws -> DashboardSession?
    /// Ends a session (signing out); `false` when there was none.
    func deleteSession(idHash: String) async throws -> Bool
    /// Records an action.
    func recordAudit(_ record: AuditRecord) async throws
    /// The newest records first, of one job or of all; at most `limit`.
    func auditRecords(job: JobID?, limit: Int) async throws -> [AuditRecord]
    /// How many queued jobs, due by `now`, come before `job` in claim order (higher priority,
    /// then older, then by id): 0 when it is next. Counted up to `limit` (the count stops there).
    /// With an `owner`, only that key's jobs are counted (a tenant must not learn the others'
    /// volume from its place in line).
    func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int
    /// The secret named `name`, shared by every server of the database: made by `make` and
    /// stored the first time it is asked for (the first writer wins), the same ever after.
    func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String
    /// Brings the text search's index up to date by at most `limit` jobs; how many it took. A
    /// store whose search needs no index of its own (PostgreSQL, memory) returns 0.
    func indexSearchText(limit: Int) async throws -> Int
    /// When a running job's lease ends unless its worker's heartbeat renews it (then another
    /// worker may take the job over); `nil` for a job that is not running.
    func leaseExpiry(of job: JobID) async throws -> Date?
    /// The attempts of `job` that ended without completing it, oldest first (at most 100).
    func attempts(of job: JobID) async throws -> [JobAttempt]
}
