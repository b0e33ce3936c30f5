import Foundation
import PostgresNIO
import Queue

// Job graphs (issue 27): a parent's fan-out, its children's ends counted on it, its cancel and
// retry over its children; each step `JobGraphStateMachine`'s, in the transaction of the job's
// own transition, the parent's row locked (children of one parent end concurrently).
extension PostgresJobStore {
    public func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]? {
        if let error = JobStoreError.childCount(children.count) { throw error }
        let ids = try await transaction { connection -> [JobID]? in
            let now = try await self.currentTime(connection)
            // The parent waits, its attempt not counted, if the lease still holds and nobody
            // asked it to stop (JobGraphStateMachine's fan-out).
            let rows = try await connection.query(
                """
                UPDATE jobctl.jobs SET attempt = attempt - 1, crashes = 0, lease_token = NULL, lease_expires_at = NULL,
                    progress = 0, children_total = \(children.count), children_completed = 0, children_failed = 0,
                    children_cancelled = 0, updated_at = \(now)
                WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                    AND NOT cancel_requested AND children_total = 0
                RETURNING owner, created_at
                """,
                logger: self.logger
            )
            var parent: (owner: String?, createdAt: Int64)?
            for try await (owner, createdAt) in rows.decode((String?, Int64).self) { parent = (owner, createdAt) }
            guard let parent else { return nil }
            let ids = JobID.makeAscending(children.count, at: Date(milliseconds: now))
            for (index, (request, id)) in zip(children, ids).enumerated() {
                try await connection.query(
                    """
                    INSERT INTO jobctl.jobs (id, kind, status, input, output, preset, preset_settings, format, range_start,
                        range_duration, priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key,
                        owner, created_at, updated_at, parent_id, child_index, role)
                    VALUES (\(id.rawValue), \(request.kind.rawValue), 'unknown', \(request.input), \(request.output),
                        \(request.preset), \(try StoredJSON.encode(request.presetSettings)), \(request.format),
                        \(request.range?.start), \(request.range?.duration), \(request.priority), \(request.maxAttempts),
                        \(request.maxAttempts), \(now), NULL, \(try StoredJSON.encode(request.metadata)), NULL,
                        \(parent.owner), \(parent.createdAt), \(now), \(lease.jobID.rawValue), \(index),
                        \(try request.child(of: lease.jobID, index: index, owner: parent.owner).role.stored()))
                    """,
                    logger: self.logger
                )
            }
            return ids
        }
        if ids != nil { await notifyNow("job") }
        return ids
    }

    /// Locks the parents of `ids` (in id order), before any of `ids` is written: every path that
    /// ends a child locks its parent first, so two children of one parent ending at once wait
    /// for each other instead of deadlocking.
    func lockParents(of ids: [JobID], _ connection: PostgresConnection) async throws {
        try await connection.query(
            """
            SELECT p.id FROM jobctl.jobs p WHERE p.id IN (
                SELECT parent_id FROM jobctl.jobs WHERE id = ANY(\(ids.map(\.rawValue))) AND parent_id IS NOT NULL
            ) ORDER BY p.id FOR UPDATE OF p
            """,
            logger: logger
        )
    }

    /// A waiting parent's progress: its children's, weighted by the media each covers (its
    /// range's duration; 1 s for a child without one).
    func refreshProgress(ofParent id: JobID, _ connection: PostgresConnection) async throws {
        _ = try await connection.query(
            """
            UPDATE jobctl.jobs SET progress = (
                SELECT COALESCE(SUM(c.progress * COALESCE(c.range_duration, 1.0)) / SUM(COALESCE(c.range_duration, 1.0)), 0)
                FROM jobctl.jobs c WHERE c.parent_id = \(id.rawValue)
            ) WHERE id = \(id.rawValue) AND status = 'reading' AND lease_token IS NULL
            """,
            logger: logger
        ).collect()
    }

    /// A job's transition is written: its webhook event if it ended, and its end counted on its
    /// parent, in the same transaction.
    func recorded(_ id: JobID, _ connection: PostgresConnection, now: Int64) async throws {
        let job = try await job(id, connection)
        try await enqueueEvent(for: job, connection, now: now)
        guard let parent = job.parent, let event = JobGraphStateMachine.childEvent(for: job.status) else { return }
        try await applyToParent(parent, event, child: (job.childIndex, job.error), connection, now: now)
        try await refreshProgress(ofParent: parent, connection)
    }

    /// `event` applied to the parent `id` and, by its command, to its children. `false` when
    /// `id` is not a parent (in `phase`, when given) or the machine does not allow the event
    /// (nothing written).
    @discardableResult
    func applyToParent(
        _ id: JobID,
        _ event: JobGraphStateMachine.Event,
        child: (index: Int?, error: JobError?)?,
        in phase: JobGraphStateMachine.Phase? = nil,
        _ connection: PostgresConnection,
        now: Int64
    ) async throws -> Bool {
        var found: JobGraphStateMachine.State?
        for try await row in try await connection.query(
            """
            SELECT status, cancel_requested, attempt, max_attempts, attempt_budget, crashes, children_total,
                children_completed, children_failed, children_cancelled
            FROM jobctl.jobs WHERE id = \(id.rawValue) AND children_total > 0 FOR UPDATE
            """,
            logger: logger
        ).decode((String, Bool, Int, Int, Int, Int, Int, Int, Int, Int).self) {
            let children = JobGraphStateMachine.Children(
                total: row.6,
                completed: row.7,
                failed: row.8,
                cancelled: row.9
            )
            found = JobGraphStateMachine.State(
                job: JobStateMachine.State(
                    status: try StoredValue.decode(row.0, column: "status", row: "job \(id)"),
                    cancelRequested: row.1,
                    attempt: row.2,
                    maxAttempts: row.3,
                    attemptBudget: row.4,
                    crashes: row.5
                ),
                phase: children.completed == children.total ? .join : .waiting,
                children: children
            )
        }
        guard let state = found, phase == nil || state.phase == phase,
            let (next, command) = JobGraphStateMachine.next(state, on: event)
        else { return false }
        let status = state.job.status
        let ended = !status.isTerminal && next.job.status.isTerminal
        // Queued for its join, or waiting for its children again after a retry.
        let restarted = next.job.status == .unknown || (next.job.status == .reading && status != .reading)
        let error =
            ended && next.job.status == .failed
            ? JobGraphStateMachine.parentError(child: child?.index, child?.error) : nil
        try await connection.query(
            """
            UPDATE jobctl.jobs SET status = \(next.job.status.rawValue), cancel_requested = \(next.job.cancelRequested),
                attempt = \(next.job.attempt), max_attempts = \(next.job.maxAttempts), crashes = \(next.job.crashes),
                children_completed = \(next.children.completed), children_failed = \(next.children.failed),
                children_cancelled = \(next.children.cancelled),
                run_at = CASE WHEN \(restarted) THEN \(now) ELSE run_at END,
                finished_at = CASE WHEN \(restarted) THEN NULL WHEN \(ended) THEN \(now) ELSE finished_at END,
                result = CASE WHEN \(restarted) THEN NULL ELSE result END,
                progress = CASE WHEN \(restarted) THEN 0 ELSE progress END,
                error_code = CASE WHEN \(restarted) THEN NULL WHEN \(error?.code.rawValue)::text IS NOT NULL
                    THEN \(error?.code.rawValue) ELSE error_code END,
                error_message = CASE WHEN \(restarted) THEN NULL WHEN \(error?.code.rawValue)::text IS NOT NULL
                    THEN \(error?.message) ELSE error_message END,
                error_retryable = CASE WHEN \(restarted) THEN NULL WHEN \(error?.code.rawValue)::text IS NOT NULL
                    THEN FALSE ELSE error_retryable END,
                updated_at = \(now)
            WHERE id = \(id.rawValue)
            """,
            logger: logger
        )
        if JobGraphStateMachine.listsOutputs(from: state, to: next, on: event) {
            // What its completed children left, before its webhook event reads the row.
            var children: [Job] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: StoredColumns.job) FROM jobctl.jobs
                WHERE parent_id = \(id.rawValue) AND status = 'completed'
                """,
                logger: logger
            ) {
                children.append(try Stored(row.makeRandomAccess()).job(tracks: []))
            }
            let listing = try JobGraphStateMachine.outputs(of: children).map { try StoredJSON.encode($0) }
            try await connection.query(
                "UPDATE jobctl.jobs SET result = \(listing) WHERE id = \(id.rawValue)",
                logger: logger
            )
        }
        if ended { try await enqueueEvent(for: id, connection, now: now) }
        if next.job.status == .unknown { try await notify(connection, "job") }
        switch command {
        case .none: break
        case .cancelActive:
            // Queued children end now, each counted on the parent; running ones are asked to stop.
            var queued: [String] = []
            for try await child in try await connection.query(
                """
                UPDATE jobctl.jobs SET status = 'cancelled', finished_at = \(now), updated_at = \(now)
                WHERE parent_id = \(id.rawValue) AND status = 'unknown' RETURNING id
                """,
                logger: logger
            ).decode(String.self) { queued.append(child) }
            for child in queued { try await recorded(JobID(child), connection, now: now) }
            try await connection.query(
                """
                UPDATE jobctl.jobs SET cancel_requested = TRUE, updated_at = \(now)
                WHERE parent_id = \(id.rawValue) AND status = 'reading'
                """,
                logger: logger
            )
            try await notify(connection, "cancel")
        case .rerunUnfinished:
            // As a retry of each (`JobStateMachine`): its attempt budget again.
            try await connection.query(
                """
                UPDATE jobctl.jobs SET status = 'unknown', run_at = \(now), max_attempts = attempt + attempt_budget, progress = 0,
                    result = NULL, crashes = 0, error_code = NULL, error_message = NULL, error_retryable = NULL,
                    cancel_requested = FALSE, finished_at = NULL, updated_at = \(now)
                WHERE parent_id = \(id.rawValue) AND status IN ('failed', 'cancelled')
                """,
                logger: logger
            )
            try await notify(connection, "job")
        }
        return true
    }

    /// A retry of a parent whose children did not all complete: they run again (the machine's
    /// retry of a waiting parent). `nil` for any other job (a plain retry).
    func retryWaitingParent(
        _ id: JobID,
        status: JobStatus,
        force: Bool,
        _ connection: PostgresConnection,
        now: Int64
    ) async throws -> Job? {
        guard status.isTerminal else { return nil }
        var found: (active: Int, crashes: Int)?
        for try await row in try await connection.query(
            """
            SELECT children_total - children_completed - children_failed - children_cancelled, crashes
            FROM jobctl.jobs WHERE id = \(id.rawValue) AND children_total > 0 AND children_completed < children_total
            """,
            logger: logger
        ).decode((Int, Int).self) { found = row }
        guard let found else { return nil }
        guard found.active == 0 else { throw JobStoreError.childrenStopping(id) }
        guard try await applyToParent(id, .job(.retry(force: force)), child: nil, connection, now: now) else {
            if found.crashes >= JobStateMachine.crashLimit && status == .failed { throw JobStoreError.poisoned(id) }
            throw JobStoreError.notRetryable(id, status)
        }
        return try await job(id, connection)
    }

    /// A child runs again only through its parent's retry (its end is counted on the parent).
    func refuseChildRetry(_ id: JobID, _ connection: PostgresConnection) async throws {
        for try await parent in try await connection.query(
            "SELECT parent_id FROM jobctl.jobs WHERE id = \(id.rawValue) AND parent_id IS NOT NULL",
            logger: logger
        ).decode(String.self) {
            throw JobStoreError.childRetry(id, parent: JobID(parent))
        }
    }
}
