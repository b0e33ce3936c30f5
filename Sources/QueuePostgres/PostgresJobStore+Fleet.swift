import Foundation
import PostgresNIO
import Queue

// The fleet page's minutes: `jobctl.job_minutes`, recorded from `jobctl.jobs`.
extension PostgresJobStore: FleetRecorder {
    public func recordMinute(_ minute: Int64, at now: Date) async throws {
        let (start, end) = (minute * 60_000, (minute + 1) * 60_000)
        try await withConnection { connection in
            var ended: [MinuteSample.Ended] = []
            let rows = try await connection.query(
                """
                SELECT status, created_at, started_at, finished_at FROM jobctl.jobs
                WHERE finished_at >= \(start) AND finished_at < \(end) AND finished_at IS NOT NULL
                """,
                logger: self.logger
            )
            for try await (status, created, started, finished) in rows.decode((String, Int64, Int64?, Int64).self) {
                guard let status = JobStatus(rawValue: status) else { continue }
                ended.append(
                    MinuteSample.Ended(status: status, createdAt: created, startedAt: started, finishedAt: finished)
                )
            }
            var queue: (queued: Int64, oldest: Int64?, running: Int64) = (0, nil, 0)
            let counts = try await connection.query(
                """
                SELECT (SELECT COUNT(*) FROM jobctl.jobs WHERE status = 'unknown'),
                    (SELECT MIN(created_at) FROM jobctl.jobs WHERE status = 'unknown'),
                    (SELECT COUNT(*) FROM jobctl.jobs WHERE status = 'reading')
                """,
                logger: self.logger
            )
            for try await row in counts.decode((Int64, Int64?, Int64).self) { queue = row }
            let sample = MinuteSample.make(
                minute: minute,
                ended: ended,
                queued: Int(queue.queued),
                running: Int(queue.running),
                oldestQueuedAt: queue.oldest,
                now: now.milliseconds
            )
            let (queued, running) = (sample.queued ?? 0, sample.running ?? 0)
            try await connection.query(
                """
                INSERT INTO jobctl.job_minutes (minute, completed, failed, cancelled, queued, running,
                    oldest_queued_ms, wait_p50_ms, wait_p95_ms, run_p50_ms, run_p95_ms)
                VALUES (\(sample.minute), \(sample.completed), \(sample.failed), \(sample.cancelled), \(queued),
                    \(running), \(sample.oldestQueuedMilliseconds), \(sample.waitP50), \(sample.waitP95),
                    \(sample.runP50), \(sample.runP95))
                ON CONFLICT (minute) DO UPDATE SET completed = EXCLUDED.completed, failed = EXCLUDED.failed,
                    cancelled = EXCLUDED.cancelled, queued = EXCLUDED.queued, running = EXCLUDED.running,
                    oldest_queued_ms = EXCLUDED.oldest_queued_ms, wait_p50_ms = EXCLUDED.wait_p50_ms,
                    wait_p95_ms = EXCLUDED.wait_p95_ms, run_p50_ms = EXCLUDED.run_p50_ms,
                    run_p95_ms = EXCLUDED.run_p95_ms
                """,
                logger: self.logger
            )
            try await connection.query(
                "DELETE FROM jobctl.job_minutes WHERE minute < \(minute - MinuteSample.retentionMinutes)",
                logger: self.logger
            )
        }
    }

    public func minutes(from first: Int64, through last: Int64) async throws -> [MinuteSample] {
        try await withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT minute, completed, failed, cancelled, queued, running, oldest_queued_ms, wait_p50_ms,
                    wait_p95_ms, run_p50_ms, run_p95_ms
                FROM jobctl.job_minutes WHERE minute >= \(first) AND minute <= \(last) ORDER BY minute
                """,
                logger: self.logger
            )
            var samples: [MinuteSample] = []
            for try await row in rows {
                let cells = row.makeRandomAccess()
                samples.append(
                    MinuteSample(
                        minute: try cells["minute"].decode(Int64.self),
                        completed: Int(try cells["completed"].decode(Int32.self)),
                        failed: Int(try cells["failed"].decode(Int32.self)),
                        cancelled: Int(try cells["cancelled"].decode(Int32.self)),
                        queued: Int(try cells["queued"].decode(Int32.self)),
                        running: Int(try cells["running"].decode(Int32.self)),
                        oldestQueuedMilliseconds: try cells["oldest_queued_ms"].decode(Int64?.self),
                        waitP50: try cells["wait_p50_ms"].decode(Int64?.self),
                        waitP95: try cells["wait_p95_ms"].decode(Int64?.self),
                        runP50: try cells["run_p50_ms"].decode(Int64?.self),
                        runP95: try cells["run_p95_ms"].decode(Int64?.self)
                    )
                )
            }
            return samples
        }
    }
}
