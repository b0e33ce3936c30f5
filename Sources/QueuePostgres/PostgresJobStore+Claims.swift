import Foundation
import Logging
import PostgresNIO
import Queue

// Claims (SKIP LOCKED), expired leases, heartbeats, cancellation checks.
extension PostgresJobStore {
    // MARK: Claiming and running

    public func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        let claimed: [ClaimedJob]
        if try await expiredLeasesDue() {
            claimed = try await transaction { connection in
                let now = try await self.settleExpiredLeases(connection)
                // Jobs of dead workers compete with queued ones by priority, then age (the
                // protocol's order; the OR forgoes the partial index, in this rare case only).
                // At the time the settling used: a lease expiring in between would otherwise be
                // claimed past its job's last attempt instead of failing it.
                return try await self.claim(
                    .queuedOrExpired,
                    as: worker,
                    limit: limit,
                    lease: lease,
                    at: now,
                    connection
                )
            }
        } else {
            // The usual case: one statement, atomic on its own. Finding nothing writes nothing
            // (no transaction id, no WAL flush), so an idle worker's poll is one index probe.
            let statement = ClaimQueued(
                worker: worker.name,
                limit: limit,
                leaseMilliseconds: lease.milliseconds,
                now: now
            )
            claimed = try await withConnection { connection in
                var claimed: [ClaimedJob] = []
                for try await job in try await connection.execute(statement, logger: self.logger) {
                    claimed.append(job)
                }
                return claimed
            }
        }
        return claimed.sorted(by: ClaimedJob.claimOrder)
    }

    /// How often a store's claims look for leases that expired (workers that died): a dead
    /// worker's jobs wait at most this much longer than their lease. With an injected clock
    /// (tests) they look every time.
    static let expiryCheckInterval = Duration.seconds(1)

    /// Whether some running job's lease has expired, checked at most every
    /// `expiryCheckInterval` (a read: most claims do not look). Found ones are looked for again
    /// at the next claim, until none is left.
    func expiredLeasesDue() async throws -> Bool {
        if clock == nil {
            let due = expiryChecked.withLock { last -> Bool in
                let now = ContinuousClock.now
                if let last, now - last < Self.expiryCheckInterval { return false }
                last = now
                return true
            }
            guard due else { return false }
        }
        let expired = try await withConnection { connection in
            let rows = try await connection.query(
                "SELECT EXISTS (SELECT 1 FROM jobctl.jobs WHERE status = 'reading' AND lease_expires_at <= \(unescaped: self.nowSQL))",
                logger: self.logger
            )
            for try await value in rows.decode(Bool.self) { return value }
            return false
        }
        if expired { expiryChecked.withLock { $0 = nil } }
        return expired
    }

    /// Where claims come from: queued jobs that are due (`ClaimQueued` is the prepared form of
    /// this statement for them), and running jobs whose lease expired.
    enum ClaimSource: String {
        case queued = "j.status = 'unknown' AND j.run_at <= t.now"
        case queuedOrExpired =
            "((j.status = 'unknown' AND j.run_at <= t.now) OR (j.status = 'reading' AND j.lease_expires_at <= t.now))"
    }

    /// Takes up to `limit` jobs from `source` in index order (SKIP LOCKED: concurrent claimers
    /// take different rows), starts their attempt and clears their previous attempt's tracks.
    func claim(
        _ source: ClaimSource,
        as worker: WorkerIdentity,
        limit: Int,
        lease: Duration,
        at now: Int64,
        _ connection: PostgresConnection
    ) async throws -> [ClaimedJob] {
        let rows = try await connection.query(
            """
            WITH t AS (SELECT \(now)::bigint AS now), claimed AS (
                UPDATE jobctl.jobs SET status = 'reading', attempt = attempt + 1, worker = \(worker.name),
                    lease_token = md5(random()::text || clock_timestamp()::text || id), lease_expires_at = t.now + \(lease.milliseconds),
                    cancel_requested = FALSE, progress = 0, started_at = t.now, finished_at = NULL, updated_at = t.now
                FROM t
                WHERE id IN (
                    SELECT j.id FROM jobctl.jobs j, t WHERE \(unescaped: source.rawValue)
                    ORDER BY j.priority DESC, j.created_at, j.id LIMIT \(limit) FOR UPDATE OF j SKIP LOCKED
                )
                RETURNING \(unescaped: StoredColumns.job), lease_token
            ),
            cleared AS (DELETE FROM jobctl.job_tracks WHERE job_id IN (SELECT id FROM claimed))
            SELECT * FROM claimed
            """,
            logger: logger
        )
        var claimed: [ClaimedJob] = []
        for try await row in rows {
            let access = row.makeRandomAccess()
            let job = try Stored(access).job(tracks: [])
            let token = try access["lease_token"].decode(String.self)
            claimed.append(
                ClaimedJob(
                    job: job,
                    lease: Lease(
                        jobID: job.id,
                        token: token,
                        attempt: job.attempt,
                        worker: worker.name,
                        hasWebhook: job.webhook != nil
                    )
                )
            )
        }
        return claimed
    }

    /// Jobs whose worker vanished: cancelled if that was asked, failed when out of attempts
    /// (the others are claimed again); each with its webhook event. Returns the time it
    /// settled at.
    func settleExpiredLeases(_ connection: PostgresConnection) async throws -> Int64 {
        let now = try await currentTime(connection)
        var ended: [String] = []
        for try await id in try await connection.query(
            """
            UPDATE jobctl.jobs SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE, finished_at = \(now),
                updated_at = \(now)
            WHERE status = 'reading' AND lease_expires_at <= \(now) AND cancel_requested RETURNING id
            """,
            logger: logger
        ).decode(String.self) { ended.append(id) }
        for try await id in try await connection.query(
            """
            UPDATE jobctl.jobs SET status = 'failed', lease_token = NULL, lease_expires_at = NULL, finished_at = \(now), updated_at = \(now),
                error_code = 'lease_lost', error_retryable = TRUE,
                error_message = 'its worker ' || coalesce(worker, '?') || ' stopped renewing the lease on attempt ' || attempt || ' of ' || max_attempts
            WHERE status = 'reading' AND lease_expires_at <= \(now) AND attempt >= max_attempts RETURNING id
            """,
            logger: logger
        ).decode(String.self) { ended.append(id) }
        for id in ended { try await enqueueEvent(for: JobID(id), connection, now: now) }
        return now
    }

    /// One statement (atomic on its own): the fenced lease extension and the tracks.
    public func heartbeat(
        _ lease: Lease,
        progress: Double,
        tracks: [JobTrack],
        extendBy: Duration
    ) async throws -> LeaseState {
        let tracksJSON = try StoredJSON.encode(tracks)
        return try await withConnection { connection in
            for try await value in try await connection.query(
                """
                WITH \(unescaped: self.clockCTE), done AS (
                    UPDATE jobctl.jobs SET lease_expires_at = t.now + \(extendBy.milliseconds),
                        progress = greatest(progress, \(min(max(progress, 0), 1))), updated_at = t.now
                    FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                    RETURNING id, cancel_requested, \(tracksJSON)::jsonb AS tracks
                ), \(unescaped: Self.replaceTracksCTEs)
                SELECT cancel_requested FROM done
                """,
                logger: self.logger
            ).decode(Bool.self) { return .held(cancelRequested: value) }
            return .lost
        }
    }

    public func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID> {
        guard !leases.isEmpty else { return [] }
        return try await withConnection { connection in
            var ids: Set<JobID> = []
            for try await id in try await connection.query(
                "SELECT id FROM jobctl.jobs WHERE id = ANY(\(leases.map(\.jobID.rawValue))) AND cancel_requested",
                logger: self.logger
            ).decode(String.self) { ids.insert(JobID(id)) }
            return ids
        }
    }
}
