import Foundation
import Logging
import PostgresNIO
import Queue

// The ends of an attempt (complete, fail, confirm a cancel, release) and the user's cancel and retry:
// each the SQL of one row of JobStateMachine's table, fenced by the lease token.
extension PostgresJobStore {
    /// Concurrent completions share a statement and a commit (`CompletionBatch`).
    public func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool {
        let completion = CompletionBatch.Completion(
            lease: lease,
            result: try StoredJSON.encode(result),
            tracks: try StoredJSON.encode(tracks)
        )
        return try await completions.complete(completion) { batch in await self.commit(batch) }
    }

    /// Completes a batch: one fenced UPDATE for all (each row matched by its own id and lease
    /// token), in a transaction with the webhook events of the jobs that have one. A statement
    /// the server rejects is retried one completion at a time, so one bad completion cannot
    /// fail the others; a lost connection fails them all (each caller handles it as before).
    func commit(_ batch: [CompletionBatch.Completion]) async -> [Result<Bool, any Error>] {
        // A lease twice in one batch (a caller's retry) would be one row of the join: later
        // ones go alone, after the batch.
        var seen: Set<JobID> = []
        let together = batch.indices.filter { seen.insert(batch[$0].lease.jobID).inserted }
        var outcomes = [Result<Bool, any Error>](repeating: .success(false), count: batch.count)
        do {
            let accepted = try await completeTogether(together.map { batch[$0] })
            for index in together { outcomes[index] = .success(accepted.contains(batch[index].lease.jobID)) }
        } catch {
            let retryAlone = together.count > 1 && Self.serverRejected(error)
            for index in together {
                outcomes[index] = retryAlone ? await completeAloneResult(batch[index]) : .failure(error)
            }
        }
        for index in batch.indices where !together.contains(index) {
            outcomes[index] = await completeAloneResult(batch[index])
        }
        return outcomes
    }

    /// The ids of the completions the batch's fenced UPDATE accepted. Without a webhook among
    /// them the statement runs alone (atomic on its own: no BEGIN and COMMIT round trips).
    func completeTogether(_ batch: [CompletionBatch.Completion]) async throws -> Set<JobID> {
        let statement = CompleteBatch(completions: batch, now: now)
        guard batch.contains(where: \.lease.hasWebhook) else {
            let rows = try await withConnection { connection in try await self.rows(of: statement, connection) }
            // Only a lease made by hand can say "no webhook" for a job with one: its event is
            // still written, if not atomically with the status. The completions stand either way
            // (they are committed): a failure here is logged, not reported as theirs.
            let missed = rows.filter(\.hasWebhook)
            if !missed.isEmpty {
                do {
                    try await transaction { connection in
                        for row in missed { try await self.recorded(row.id, connection, now: row.now) }
                    }
                } catch {
                    logger.error(
                        "Writing the webhook events of completed jobs failed",
                        metadata: ["jobs": "\(missed.map(\.id))", "error": "\(error)"]
                    )
                }
            }
            return Set(rows.map(\.id))
        }
        return try await transaction { connection in
            try await self.lockParents(of: batch.filter(\.lease.hasWebhook).map(\.lease.jobID), connection)
            let rows = try await self.rows(of: statement, connection)
            for row in rows where row.hasWebhook { try await self.recorded(row.id, connection, now: row.now) }
            return Set(rows.map(\.id))
        }
    }

    /// Whether the server answered `error` (a statement it rejected), rather than the
    /// connection failing.
    static func serverRejected(_ error: any Error) -> Bool {
        let cause = (error as? JobStoreError)?.cause ?? error
        return (cause as? PSQLError)?.serverInfo != nil
    }

    func completeAloneResult(_ completion: CompletionBatch.Completion) async -> Result<Bool, any Error> {
        do { return .success(try await completeAlone(completion)) } catch { return .failure(error) }
    }

    /// One completion in a statement of its own.
    func completeAlone(_ completion: CompletionBatch.Completion) async throws -> Bool {
        let (lease, resultJSON, tracksJSON) = (completion.lease, completion.result, completion.tracks)
        return try await finish(lease) {
            """
            WITH \(unescaped: self.clockCTE), done AS (
                UPDATE jobctl.jobs SET status = 'completed', progress = 1, result = \(resultJSON), error_code = NULL, error_message = NULL,
                    error_retryable = NULL, finished_at = t.now, lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE,
                    updated_at = t.now
                FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                RETURNING \(unescaped: Self.finishedColumns), \(tracksJSON)::jsonb AS tracks
            ), \(unescaped: Self.afterFinish)
            """
        }
    }

    public func fail(_ lease: Lease, error: JobError, retryDelay: Duration) async throws -> Bool {
        // A retryable failure of a job whose cancellation was asked for ends it cancelled.
        try await finish(lease) {
            """
            WITH \(unescaped: self.clockCTE), done AS (
                UPDATE jobctl.jobs SET
                    status = CASE WHEN \(error.retryable) AND cancel_requested THEN 'cancelled'
                        WHEN \(error.retryable) AND attempt < max_attempts THEN 'unknown' ELSE 'failed' END,
                    run_at = CASE WHEN \(error.retryable) AND attempt < max_attempts THEN t.now + \(retryDelay.milliseconds) ELSE run_at END,
                    finished_at = CASE WHEN \(error.retryable) AND NOT cancel_requested AND attempt < max_attempts THEN NULL ELSE t.now END,
                    error_code = \(error.code.rawValue), error_message = \(error.message), error_retryable = \(error.retryable),
                    lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE, updated_at = t.now
                FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                RETURNING \(unescaped: Self.finishedColumns), NULL::jsonb AS tracks
            ), \(unescaped: Self.afterFinish)
            """
        }
    }

    public func confirmCancelled(_ lease: Lease) async throws -> Bool {
        try await finish(lease) {
            """
            WITH \(unescaped: self.clockCTE), done AS (
                UPDATE jobctl.jobs SET status = 'cancelled', finished_at = t.now, lease_token = NULL, lease_expires_at = NULL,
                    cancel_requested = FALSE, crashes = 0, updated_at = t.now
                FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                RETURNING \(unescaped: Self.finishedColumns), NULL::jsonb AS tracks
            ), \(unescaped: Self.afterFinish)
            """
        }
    }

    public func release(_ lease: Lease) async throws -> Bool {
        // Handing back a job whose cancellation was asked for ends it cancelled.
        try await finish(lease) {
            """
            WITH \(unescaped: self.clockCTE), done AS (
                UPDATE jobctl.jobs SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'unknown' END,
                    finished_at = CASE WHEN cancel_requested THEN t.now ELSE NULL END,
                    attempt = CASE WHEN cancel_requested THEN attempt ELSE attempt - 1 END, run_at = t.now, progress = 0,
                    lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE, crashes = 0, updated_at = t.now
                FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                RETURNING \(unescaped: Self.finishedColumns), NULL::jsonb AS tracks
            ), \(unescaped: Self.afterFinish)
            """
        }
    }

    /// What the `done` CTE of an attempt's end returns, besides its `tracks`.
    /// (`has_webhook`: an event to write, or a parent to tell: the work after the statement.)
    static let finishedColumns = "id, status, (webhook IS NOT NULL OR parent_id IS NOT NULL) AS has_webhook, t.now"

    /// After `done` (the fenced UPDATE): its tracks recorded, workers woken if the job is queued
    /// again; the statement returns the new status, whether there is a webhook, and the time.
    static let afterFinish = """
        \(replaceTracksCTEs),
        woken AS (SELECT pg_notify('\(channel)', 'job') FROM done WHERE status = 'unknown')
        SELECT status, has_webhook, now, (SELECT count(*) FROM woken) FROM done
        """

    /// Replaces the tracks of the job in `done` by `done.tracks` (a JSON array of `JobTrack`;
    /// `NULL` leaves them as they are), in the same statement.
    static let replaceTracksCTEs = """
        gone AS (
            DELETE FROM jobctl.job_tracks g USING done
            WHERE g.job_id = done.id AND done.tracks IS NOT NULL
                AND g.idx NOT IN (SELECT x."index" FROM jsonb_to_recordset(done.tracks) AS x("index" integer))
        ),
        put AS (
            INSERT INTO jobctl.job_tracks (job_id, idx, source_index, media_type, status, codec, read, written)
            SELECT done.id, x."index", x."sourceIndex", x."mediaType", x.status, x.codec, x.read, x.written
            FROM done, jsonb_to_recordset(coalesce(done.tracks, '[]'::jsonb))
                AS x("index" integer, "sourceIndex" integer, "mediaType" text, status text, codec text, read bigint, written bigint)
            ON CONFLICT (job_id, idx) DO UPDATE SET source_index = excluded.source_index, media_type = excluded.media_type,
                status = excluded.status, codec = excluded.codec, read = excluded.read, written = excluded.written
        )
        """

    /// `t`, the statement's time: the injected clock (tests) or the database's.
    var clockCTE: String { "t AS (SELECT \(nowSQL)::bigint AS now)" }

    /// The statement's time as SQL: the injected clock's value (tests), or the database's.
    var nowSQL: String { now.map(String.init) ?? Self.databaseNow }

    /// Ends the current attempt with `statement` (the fenced UPDATE with `afterFinish`). A job
    /// that ended with a webhook gets its event in the same transaction; one without a webhook
    /// (or queued again) needs nothing else.
    func finish(_ lease: Lease, statement: @escaping @Sendable () throws -> PostgresQuery) async throws -> Bool {
        try await transaction { connection in
            if lease.hasWebhook { try await self.lockParents(of: [lease.jobID], connection) }
            var outcome: (status: String, hasWebhook: Bool, now: Int64)?
            for try await (status, hasWebhook, now, _) in try await connection.query(statement(), logger: self.logger)
                .decode((String, Bool, Int64, Int64).self)
            {
                outcome = (status, hasWebhook, now)
            }
            guard let outcome else { return false }
            if outcome.hasWebhook, JobStatus(rawValue: outcome.status)?.isTerminal == true {
                try await self.recorded(lease.jobID, connection, now: outcome.now)
            }
            return true
        }
    }

    // MARK: Cancel and retry

    public func cancel(_ id: JobID) async throws -> CancelOutcome {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            try await self.lockParents(of: [id], connection)
            let status = try await self.status(of: id, connection, lock: true)
            switch status {
            case .unknown:
                try await connection.query(
                    "UPDATE jobctl.jobs SET status = 'cancelled', finished_at = \(now), updated_at = \(now) WHERE id = \(id.rawValue)",
                    logger: self.logger
                )
                try await self.recorded(id, connection, now: now)
                return .cancelled(try await self.job(id, connection))
            case .reading:
                // A parent waiting for its children ends at once, and they are cancelled.
                if try await self.applyToParent(id, .job(.cancel), child: nil, in: .waiting, connection, now: now) {
                    return .cancelled(try await self.job(id, connection))
                }
                try await connection.query(
                    "UPDATE jobctl.jobs SET cancel_requested = TRUE, updated_at = \(now) WHERE id = \(id.rawValue)",
                    logger: self.logger
                )
                try await self.notify(connection, "cancel")
                return .requested(try await self.job(id, connection))
            case .completed, .failed, .cancelled:
                throw JobStoreError.alreadyEnded(id, status)
            }
        }
    }

    public func retry(_ id: JobID, force: Bool) async throws -> Job {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            let status = try await self.status(of: id, connection, lock: true)
            try await self.refuseChildRetry(id, connection)
            if let parent = try await self.retryWaitingParent(id, status: status, force: force, connection, now: now) {
                return parent
            }
            var crashes = 0
            for try await value in try await connection.query(
                "SELECT crashes FROM jobctl.jobs WHERE id = \(id.rawValue)",
                logger: self.logger
            ).decode(Int.self) { crashes = value }
            let state = JobStateMachine.State(status: status, attempt: 0, maxAttempts: 1, crashes: crashes)
            guard JobStateMachine.next(state, on: .retry(force: force))?.status == .unknown else {
                if state.isPoisoned && status == .failed { throw JobStoreError.poisoned(id) }
                throw JobStoreError.notRetryable(id, status)
            }
            try await connection.query(
                """
                UPDATE jobctl.jobs SET status = 'unknown', run_at = \(now), max_attempts = attempt + attempt_budget, progress = 0, result = NULL, crashes = 0,
                    error_code = NULL, error_message = NULL, error_retryable = NULL, cancel_requested = FALSE, finished_at = NULL, updated_at = \(now)
                WHERE id = \(id.rawValue)
                """,
                logger: self.logger
            )
            try await self.notify(connection, "job")
            return try await self.job(id, connection)
        }
    }
}
