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
    /// The secret named `name`, shared by every server of the database: made by `make` and
    /// stored the first time it is asked for (the first writer wins), the same ever after.
    func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String
    /// Brings the text search's index up to date by at most `limit` jobs; how many it took. A
    /// store whose search needs no index of its own (PostgreSQL, memory) returns 0.
    func indexSearchText(limit: Int) async throws -> Int
}
