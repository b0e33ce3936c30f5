import Foundation
import GRDB
import JobctlCore
import Queue

// Claims, expired leases, heartbeats, cancellation checks.
extension SQLiteJobStore {
    /// Whether `sql` (an `EXISTS` over `:now`) finds anything: a read, so idle workers and
    /// dispatchers polling never take the write lock.
    func anyDue(_ sql: String, now: Int64) async throws -> Bool {
        try await read { db in try Bool.fetchOne(db.cachedStatement(sql: sql), arguments: ["now": now]) ?? false }
    }

    // MARK: Claiming and running

    public func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        let now = self.now
        let expires = now + lease.milliseconds
        let claimable = try await anyDue(
            """
            SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_queued WHERE status = 'unknown' AND run_at <= :now)
                OR EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_running WHERE status = 'reading' AND lease_expires_at <= :now)
            """,
            now: now
        )
        guard claimable else { return [] }
        return try await write { db in
            // Each source takes its first `limit` rows in index order (INDEXED BY: without
            // statistics the planner would sort the whole queue), so a claim reads a few rows
            // however long the queue is. Jobs whose worker vanished: cancelled if that was
            // asked, failed when out of attempts or when it makes them poison jobs
            // (JobStateMachine.crashLimit crashes since the last reset).
            var ended = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE jobs SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0, crashes = 0, finished_at = :now,
                            updated_at = :now
                        WHERE status = 'reading' AND lease_expires_at <= :now AND cancel_requested = 1
                        RETURNING id
                        """
                ),
                arguments: ["now": now]
            )
            ended += try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE jobs SET status = 'failed', lease_token = NULL, lease_expires_at = NULL, finished_at = :now, updated_at = :now,
                            crashes = crashes + 1,
                            error_code = CASE WHEN crashes + 1 >= :crashLimit THEN :crashedCode ELSE :lostCode END,
                            error_retryable = crashes + 1 < :crashLimit,
                            error_message = CASE WHEN crashes + 1 >= :crashLimit THEN replace(:crashed, '{worker}', coalesce(worker, '?'))
                                ELSE 'its worker ' || coalesce(worker, '?') || ' stopped renewing the lease on attempt '
                                || attempt || ' of ' || max_attempts END
                        WHERE status = 'reading' AND lease_expires_at <= :now AND (attempt >= max_attempts OR crashes + 1 >= :crashLimit)
                        RETURNING id
                        """
                ),
                arguments: [
                    "now": now, "crashLimit": JobStateMachine.crashLimit,
                    "crashed": JobError.workerCrashedMessage(worker: "{worker}"),
                    "crashedCode": ErrorCode.workerCrashed.rawValue, "lostCode": ErrorCode.leaseLost.rawValue,
                ]
            )
            for id in ended { try SQLiteJobStore.recorded(JobID(id), db, now: now) }
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE jobs SET status = 'reading', attempt = attempt + 1, worker = :worker, lease_token = lower(hex(randomblob(16))),
                            crashes = CASE WHEN status = 'reading' THEN crashes + 1 ELSE crashes END,
                            lease_expires_at = :expires, cancel_requested = 0, progress = 0, started_at = :now, finished_at = NULL,
                            updated_at = :now
                        WHERE id IN (
                            SELECT id FROM (
                                SELECT * FROM (
                                    SELECT id, priority, created_at FROM jobs INDEXED BY jobs_queued WHERE status = 'unknown' AND run_at <= :now
                                    ORDER BY priority DESC, created_at, id LIMIT :limit
                                )
                                UNION ALL
                                SELECT * FROM (
                                    SELECT id, priority, created_at FROM jobs INDEXED BY jobs_running WHERE status = 'reading' AND lease_expires_at <= :now
                                    ORDER BY priority DESC, created_at, id LIMIT :limit
                                )
                            )
                            ORDER BY priority DESC, created_at, id LIMIT :limit
                        )
                        RETURNING \(StoredColumns.job), lease_token
                        """
                ),
                arguments: ["worker": worker.name, "expires": expires, "now": now, "limit": limit]
            )
            try db.run(
                sql: "DELETE FROM job_tracks WHERE job_id IN (SELECT value FROM json_each(?))",
                arguments: [
                    try StoredJSON.encode(rows.map { $0["id"] as String })
                ]
            )
            let columns = rows.first.map(Stored.Columns.init)
            return ClaimedJob.inClaimOrder(
                try rows.map { row in
                    let job = try Stored(row, columns: columns).job(tracks: [])
                    return ClaimedJob(
                        job: job,
                        lease: Lease(
                            jobID: job.id,
                            token: row["lease_token"],
                            attempt: job.attempt,
                            worker: worker.name
                        )
                    )
                }
            )
        }
    }

    public func heartbeat(
        _ lease: Lease,
        progress: Double,
        tracks: [JobTrack],
        extendBy: Duration
    ) async throws -> LeaseState {
        let now = self.now
        return try await write { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            UPDATE jobs SET lease_expires_at = ?, progress = max(progress, ?), updated_at = ?
                            WHERE id = ? AND lease_token = ? AND status = 'reading'
                            RETURNING cancel_requested, parent_id
                            """
                    ),
                    arguments: [
                        now + extendBy.milliseconds, JobProgress.clamped(progress), now, lease.jobID.rawValue,
                        lease.token,
                    ]
                )
            else { return .lost }
            let cancelRequested: Bool = row["cancel_requested"]
            try SQLiteJobStore.replaceTracks(tracks, of: lease.jobID, db)
            if let parent: String = row["parent_id"] { try SQLiteJobStore.refreshProgress(ofParent: JobID(parent), db) }
            return .held(cancelRequested: cancelRequested)
        }
    }

    public func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID> {
        guard !leases.isEmpty else { return [] }
        return try await read { db in
            let ids = try String.fetchAll(
                db,
                sql: "SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND cancel_requested = 1",
                arguments: [try StoredJSON.encode(leases.map(\.jobID.rawValue))]
            )
            return Set(ids.map { JobID($0) })
        }
    }
}
