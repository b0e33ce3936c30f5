import Foundation
import GRDB
import Queue

// The fleet page's minutes: the `job_minutes` table, recorded from `jobs`.
extension SQLiteJobStore: FleetRecorder {
    public func recordMinute(_ minute: Int64, at now: Date) async throws {
        let nowMilliseconds = now.milliseconds
        try await write { db in
            let ended = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT status, created_at, started_at, finished_at FROM jobs
                        WHERE finished_at >= ? AND finished_at < ? AND finished_at IS NOT NULL
                        """
                ),
                arguments: [minute * 60_000, (minute + 1) * 60_000]
            )
            .compactMap { row -> MinuteSample.Ended? in
                guard let status = JobStatus(rawValue: row["status"]) else { return nil }
                return MinuteSample.Ended(
                    status: status,
                    createdAt: row["created_at"],
                    startedAt: row["started_at"],
                    finishedAt: row["finished_at"]
                )
            }
            let queue = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT COUNT(*) FROM jobs WHERE status = 'unknown') AS queued,
                        (SELECT MIN(created_at) FROM jobs WHERE status = 'unknown') AS oldest,
                        (SELECT COUNT(*) FROM jobs WHERE status = 'reading') AS running
                    """
            )
            let sample = MinuteSample.make(
                minute: minute,
                ended: ended,
                queued: queue?["queued"] ?? 0,
                running: queue?["running"] ?? 0,
                oldestQueuedAt: queue?["oldest"],
                now: nowMilliseconds
            )
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO job_minutes (minute, completed, failed, cancelled, queued, running,
                        oldest_queued_ms, wait_p50_ms, wait_p95_ms, run_p50_ms, run_p95_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    sample.minute, sample.completed, sample.failed, sample.cancelled, sample.queued, sample.running,
                    sample.oldestQueuedMilliseconds, sample.waitP50, sample.waitP95, sample.runP50, sample.runP95,
                ]
            )
            try db.execute(
                sql: "DELETE FROM job_minutes WHERE minute < ?",
                arguments: [minute - MinuteSample.retentionMinutes]
            )
        }
    }

    public func minutes(from first: Int64, through last: Int64) async throws -> [MinuteSample] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT minute, completed, failed, cancelled, queued, running, oldest_queued_ms, wait_p50_ms,
                        wait_p95_ms, run_p50_ms, run_p95_ms
                    FROM job_minutes WHERE minute >= ? AND minute <= ? ORDER BY minute
                    """,
                arguments: [first, last]
            )
            .map { row in
                MinuteSample(
                    minute: row["minute"],
                    completed: row["completed"],
                    failed: row["failed"],
                    cancelled: row["cancelled"],
                    queued: row["queued"],
                    running: row["running"],
                    oldestQueuedMilliseconds: row["oldest_queued_ms"],
                    waitP50: row["wait_p50_ms"],
                    waitP95: row["wait_p95_ms"],
                    runP50: row["run_p50_ms"],
                    runP95: row["run_p95_ms"]
                )
            }
        }
    }
}
