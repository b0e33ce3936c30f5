import Foundation
import PostgresNIO
import Queue

// The dashboard's sessions and audit trail: `jobctl.dashboard_sessions` and `jobctl.audit_log`.
extension PostgresJobStore: DashboardStore {
    public func createSession(_ session: DashboardSession) async throws {
        try await withConnection { connection in
            try await connection.query(
                "DELETE FROM jobctl.dashboard_sessions WHERE expires_at <= \(session.createdAt.milliseconds)",
                logger: self.logger
            )
            try await connection.query(
                """
                INSERT INTO jobctl.dashboard_sessions (id_hash, key_id, csrf_token, created_at, expires_at)
                VALUES (\(session.idHash), \(session.keyID), \(session.csrfToken), \(session.createdAt.milliseconds),
                    \(session.expiresAt.milliseconds))
                """,
                logger: self.logger
            )
        }
    }

    public func session(idHash: String, at now: Date) async throws -> DashboardSession? {
        try await withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT key_id, csrf_token, created_at, expires_at FROM jobctl.dashboard_sessions
                WHERE id_hash = \(idHash) AND expires_at > \(now.milliseconds)
                """,
                logger: self.logger
            )
            for try await (keyID, csrf, created, expires) in rows.decode((String, String, Int64, Int64).self) {
                return DashboardSession(
                    idHash: idHash,
                    keyID: keyID,
                    csrfToken: csrf,
                    createdAt: Date(milliseconds: created),
                    expiresAt: Date(milliseconds: expires)
                )
            }
            return nil
        }
    }

    public func deleteSession(idHash: String) async throws -> Bool {
        try await withConnection { connection in
            let rows = try await connection.query(
                "DELETE FROM jobctl.dashboard_sessions WHERE id_hash = \(idHash) RETURNING id_hash",
                logger: self.logger
            )
            for try await _ in rows { return true }
            return false
        }
    }

    public func recordAudit(_ record: AuditRecord) async throws {
        try await withConnection { connection in
            try await connection.query(
                """
                INSERT INTO jobctl.audit_log (at, key_id, action, job_id, outcome)
                VALUES (\(record.at.milliseconds), \(record.keyID), \(record.action), \(record.jobID.rawValue),
                    \(record.outcome))
                """,
                logger: self.logger
            )
        }
    }

    /// A text search scans in parallel within the goal at a million jobs (docs/benchmarks.md):
    /// no index of its own yet.
    public func indexSearchText(limit: Int) async throws -> Int { 0 }

    public func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String {
        let made = make()
        return try await withConnection { connection in
            // Two statements: the second reads with a snapshot of its own, so it sees a row
            // another server committed while this one's insert waited on it.
            _ = try await connection.query(
                """
                INSERT INTO jobctl.server_secrets (name, value) VALUES (\(name), \(made))
                ON CONFLICT (name) DO NOTHING
                """,
                logger: self.logger
            )
            let rows = try await connection.query(
                "SELECT value FROM jobctl.server_secrets WHERE name = \(name)",
                logger: self.logger
            )
            for try await value in rows.decode(String.self) { return value }
            throw JobStoreError(.databaseUnavailable, "the server secret \(name) was neither stored nor found")
        }
    }

    public func auditRecords(job: JobID?, limit: Int) async throws -> [AuditRecord] {
        try await withConnection { connection in
            let id = job?.rawValue
            let rows = try await connection.query(
                """
                SELECT at, key_id, action, job_id, outcome FROM jobctl.audit_log
                WHERE \(id)::text IS NULL OR job_id = \(id) ORDER BY seq DESC LIMIT \(limit)
                """,
                logger: self.logger
            )
            var records: [AuditRecord] = []
            for try await (at, key, action, job, outcome) in rows.decode((Int64, String, String, String, String).self) {
                records.append(
                    AuditRecord(
                        at: Date(milliseconds: at),
                        keyID: key,
                        action: action,
                        jobID: JobID(job),
                        outcome: outcome
                    )
                )
            }
            return records
        }
    }
}
