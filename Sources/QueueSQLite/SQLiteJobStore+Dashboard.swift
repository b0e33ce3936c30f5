import Foundation
import GRDB
import Queue

// The dashboard's sessions and audit trail: the `dashboard_sessions` and `audit_log` tables.
extension SQLiteJobStore: DashboardStore {
    public func createSession(_ session: DashboardSession) async throws {
        try await write { db in
            try db.execute(
                sql: "DELETE FROM dashboard_sessions WHERE expires_at <= ?",
                arguments: [session.createdAt.milliseconds]
            )
            try db.execute(
                sql: """
                    INSERT INTO dashboard_sessions (id_hash, key_id, csrf_token, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?)
                    """,
                arguments: [
                    session.idHash, session.keyID, session.csrfToken, session.createdAt.milliseconds,
                    session.expiresAt.milliseconds,
                ]
            )
        }
    }

    public func session(idHash: String, at now: Date) async throws -> DashboardSession? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT key_id, csrf_token, created_at, expires_at FROM dashboard_sessions
                            WHERE id_hash = ? AND expires_at > ?
                            """
                    ),
                    arguments: [idHash, now.milliseconds]
                )
            else { return nil }
            return DashboardSession(
                idHash: idHash,
                keyID: row["key_id"],
                csrfToken: row["csrf_token"],
                createdAt: Date(milliseconds: row["created_at"]),
                expiresAt: Date(milliseconds: row["expires_at"])
            )
        }
    }

    public func deleteSession(idHash: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM dashboard_sessions WHERE id_hash = ?", arguments: [idHash])
            return db.changesCount == 1
        }
    }

    public func recordAudit(_ record: AuditRecord) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO audit_log (at, key_id, action, job_id, outcome) VALUES (?, ?, ?, ?, ?)",
                arguments: [record.at.milliseconds, record.keyID, record.action, record.jobID.rawValue, record.outcome]
            )
        }
    }

    public func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String {
        let made = make()
        return try await write { db in
            try db.execute(
                sql: "INSERT INTO server_secrets (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING",
                arguments: [name, made]
            )
            return try String.fetchOne(db, sql: "SELECT value FROM server_secrets WHERE name = ?", arguments: [name])
                ?? made
        }
    }

    public func auditRecords(job: JobID?, limit: Int) async throws -> [AuditRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT at, key_id, action, job_id, outcome FROM audit_log
                    WHERE ?1 IS NULL OR job_id = ?1 ORDER BY seq DESC LIMIT ?2
                    """,
                arguments: [job?.rawValue, limit]
            )
            .map { row in
                AuditRecord(
                    at: Date(milliseconds: row["at"]),
                    keyID: row["key_id"],
                    action: row["action"],
                    jobID: JobID(row["job_id"] as String),
                    outcome: row["outcome"]
                )
            }
        }
    }
}
