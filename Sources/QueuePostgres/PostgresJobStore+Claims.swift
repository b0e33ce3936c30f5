import Foundation
import JobctlCore
import Logging
import PostgresNIO
import Queue

// Claims (SKIP LOCKED), expired leases, heartbeats, cancellation checks.
extension PostgresJobStore {
    // MARK: Claiming and running

    public func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        let claim = Claim(worker: worker.name, limit: limit, leaseMilliseconds: lease.milliseconds, now: now)
        let claimed: [ClaimedJob]
        if try await expiredLeasesDue() {
            claimed = try await transaction { connection in
                // At the time the settling used: a lease expiring in between would otherwise be
                // claimed past its job's last attempt instead of failing it.
                let settled = try await self.settleExpiredLeases(connection)
                return try await self.rows(of: ClaimQueuedOrExpired(claim: claim.at(settled)), connection)
            }
        } else {
            // The usual case: one statement, atomic on its own. Finding nothing writes nothing
            // (no transaction id, no WAL flush), so an idle worker's poll is one index probe.
            let statement = ClaimQueued(claim: claim)
            claimed = try await withConnection { connection in try await self.rows(of: statement, connection) }
        }
        return ClaimedJob.inClaimOrder(claimed)
    }

    /// Every row a prepared statement returns.
    func rows<Statement: PostgresPreparedStatement>(
        of statement: Statement,
        _ connection: PostgresConnection
    ) async throws -> [Statement.Row] {
        var rows: [Statement.Row] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
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

    /// Jobs whose worker vanished: cancelled if that was asked, failed when out of attempts or
    /// when it makes them poison jobs (JobStateMachine.crashLimit crashes since the last reset; the others
    /// are claimed again); each with its webhook event. Returns the time it settled at.
    func settleExpiredLeases(_ connection: PostgresConnection) async throws -> Int64 {
        let now = try await currentTime(connection)
        // Parents before children, as every path that ends a child locks them (no deadlock).
        try await connection.query(
            """
            SELECT p.id FROM jobctl.jobs p WHERE p.id IN (
                SELECT parent_id FROM jobctl.jobs WHERE status = 'reading' AND lease_expires_at <= \(now)
                    AND parent_id IS NOT NULL
            ) ORDER BY p.id FOR UPDATE OF p
            """,
            logger: logger
        )
        var ended: [String] = []
        for try await id in try await connection.query(
            """
            UPDATE jobctl.jobs SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE, crashes = 0, finished_at = \(now),
                updated_at = \(now)
            WHERE status = 'reading' AND lease_expires_at <= \(now) AND cancel_requested RETURNING id
            """,
            logger: logger
        ).decode(String.self) { ended.append(id) }
        for try await id in try await connection.query(
            """
            UPDATE jobctl.jobs SET status = 'failed', lease_token = NULL, lease_expires_at = NULL, finished_at = \(now), updated_at = \(now),
                crashes = crashes + 1,
                error_code = CASE WHEN crashes + 1 >= \(JobStateMachine.crashLimit) THEN \(ErrorCode.workerCrashed.rawValue) ELSE \(ErrorCode.leaseLost.rawValue) END,
                error_retryable = crashes + 1 < \(JobStateMachine.crashLimit),
                error_message = CASE WHEN crashes + 1 >= \(JobStateMachine.crashLimit)
                    THEN replace(\(JobError.workerCrashedMessage(worker: "{worker}")), '{worker}', coalesce(worker, '?'))
                    ELSE 'its worker ' || coalesce(worker, '?') || ' stopped renewing the lease on attempt ' || attempt || ' of ' || max_attempts END
            WHERE status = 'reading' AND lease_expires_at <= \(now)
                AND (attempt >= max_attempts OR crashes + 1 >= \(JobStateMachine.crashLimit)) RETURNING id
            """,
            logger: logger
        ).decode(String.self) { ended.append(id) }
        for id in ended { try await recorded(JobID(id), connection, now: now) }
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
                        progress = greatest(progress, \(JobProgress.clamped(progress))), updated_at = t.now
                    FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                    RETURNING id, cancel_requested, parent_id, \(tracksJSON)::jsonb AS tracks
                ), \(unescaped: Self.replaceTracksCTEs)
                SELECT cancel_requested, parent_id FROM done
                """,
                logger: self.logger
            ).decode((Bool, String?).self) {
                // The parent's progress in a statement of its own: this one holds the child's
                // row, and graph transitions lock a parent before its children.
                if let parent = value.1 { try await self.refreshProgress(ofParent: JobID(parent), connection) }
                return .held(cancelRequested: value.0)
            }
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
