import Foundation
import JobctlCore
import PostgresNIO
import Queue

// A job seen from the queue: its place in line, its lease, the attempts that ended it badly.
extension PostgresJobStore {
    public func attempts(of job: JobID) async throws -> [JobAttempt] {
        try await withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT attempt, worker, started_at, ended_at, outcome, error_code, error_message
                FROM jobctl.job_attempts WHERE job_id = \(job.rawValue) ORDER BY attempt, ended_at LIMIT 100
                """,
                logger: self.logger
            )
            var attempts: [JobAttempt] = []
            for try await (attempt, worker, started, ended, outcome, code, message) in rows.decode(
                (Int, String?, Int64?, Int64, String, String?, String?).self
            ) {
                attempts.append(
                    JobAttempt(
                        attempt: attempt,
                        worker: worker,
                        startedAt: started.map { Date(milliseconds: $0) },
                        endedAt: Date(milliseconds: ended),
                        outcome: outcome,
                        errorCode: code.map(ErrorCode.init(rawValue:)),
                        errorMessage: message
                    )
                )
            }
            return attempts
        }
    }

    public func leaseExpiry(of job: JobID) async throws -> Date? {
        try await withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT lease_expires_at FROM jobctl.jobs WHERE id = \(job.rawValue) AND status = 'reading'
                """,
                logger: self.logger
            )
            for try await (expiry, ) in rows.decode((Int64?,).self) {
                return expiry.map { Date(milliseconds: $0) }
            }
            return nil
        }
    }

    public func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int {
        try await withConnection { connection in
            let (created, id) = (job.createdAt.milliseconds, job.id.rawValue)
            let rows =
                if let owner {
                    try await connection.query(
                        """
                        SELECT COUNT(*) FROM (SELECT 1 FROM jobctl.jobs
                            WHERE status = 'unknown' AND run_at <= \(now.milliseconds) AND id <> \(id) AND owner = \(owner)
                                AND (priority > \(job.priority) OR (priority = \(job.priority) AND (created_at, id) < (\(created), \(id))))
                            LIMIT \(limit)) AS ahead
                        """,
                        logger: self.logger
                    )
                } else {
                    try await connection.query(
                        """
                        SELECT COUNT(*) FROM (SELECT 1 FROM jobctl.jobs
                            WHERE status = 'unknown' AND run_at <= \(now.milliseconds) AND id <> \(id)
                                AND (priority > \(job.priority) OR (priority = \(job.priority) AND (created_at, id) < (\(created), \(id))))
                            LIMIT \(limit)) AS ahead
                        """,
                        logger: self.logger
                    )
                }
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }
    }
}
