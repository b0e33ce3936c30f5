import Foundation
import GRDB
import JobctlCore
import Queue

// A job seen from the queue: its place in line, its lease, the attempts that ended it badly.
extension SQLiteJobStore {
    public func attempts(of job: JobID) async throws -> [JobAttempt] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT attempt, worker, started_at, ended_at, outcome, error_code, error_message
                    FROM job_attempts WHERE job_id = ? ORDER BY attempt, ended_at LIMIT 100
                    """,
                arguments: [job.rawValue]
            )
            .map { row in
                JobAttempt(
                    attempt: row["attempt"],
                    worker: row["worker"],
                    startedAt: (row["started_at"] as Int64?).map { Date(milliseconds: $0) },
                    endedAt: Date(milliseconds: row["ended_at"]),
                    outcome: row["outcome"],
                    errorCode: (row["error_code"] as String?).map(ErrorCode.init(rawValue:)),
                    errorMessage: row["error_message"]
                )
            }
        }
    }

    public func leaseExpiry(of job: JobID) async throws -> Date? {
        try await read { db in
            try Int64.fetchOne(
                db,
                sql: "SELECT lease_expires_at FROM jobs WHERE id = ? AND status = 'reading'",
                arguments: [job.rawValue]
            )
            .map { Date(milliseconds: $0) }
        }
    }

    public func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int {
        try await read { db in
            // Two statements, not `?6 IS NULL OR owner = ?6`, so that each has its index's plan.
            try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COUNT(*) FROM (SELECT 1 FROM jobs
                            WHERE status = 'unknown' AND run_at <= ?1 AND id != ?4 \(owner == nil ? "" : "AND owner = ?6")
                                AND (priority > ?2 OR (priority = ?2 AND (created_at, id) < (?3, ?4)))
                            LIMIT ?5)
                        """
                ),
                arguments: StatementArguments(
                    [now.milliseconds, job.priority, job.createdAt.milliseconds, job.id.rawValue, limit]
                        + (owner.map { [$0] } ?? [])
                )
            ) ?? 0
        }
    }
}
