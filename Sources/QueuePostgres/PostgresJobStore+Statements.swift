import PostgresNIO
import Queue

// The hot path's statements, prepared once per connection: a claim and a batch of completions
// are parsed and planned once, not on every call (parsing and planning them was a third of the
// server's time; docs/benchmarks.md).
extension PostgresJobStore {
    /// `t`, the statement's time, from the bound injected clock (tests) or, when it is `NULL`,
    /// the database's (`COALESCE` of a parameter and a stable expression stays an index condition).
    static func clockCTE(parameter: Int) -> String {
        "t AS (SELECT COALESCE($\(parameter)::bigint, \(databaseNow)) AS now)"
    }

    /// A claim's SQL: takes up to `limit` jobs matching `condition` in index order (SKIP LOCKED:
    /// concurrent claimers take different rows), starts their attempt and clears their previous
    /// attempt's tracks. `$1` worker, `$2` limit, `$3` lease (ms), `$4` the injected time or NULL.
    static func claimSQL(where condition: String) -> String {
        """
        WITH \(clockCTE(parameter: 4)), claimed AS (
            UPDATE jobctl.jobs SET status = 'reading', attempt = attempt + 1, worker = $1,
                lease_token = md5(random()::text || clock_timestamp()::text || id), lease_expires_at = t.now + $3,
                crashes = CASE WHEN status = 'reading' THEN crashes + 1 ELSE crashes END,
                cancel_requested = FALSE, progress = 0, started_at = t.now, finished_at = NULL, updated_at = t.now
            FROM t
            WHERE id IN (
                SELECT j.id FROM jobctl.jobs j, t WHERE \(condition)
                ORDER BY j.priority DESC, j.created_at, j.id LIMIT $2 FOR UPDATE OF j SKIP LOCKED
            )
            RETURNING \(StoredColumns.job), lease_token
        ),
        cleared AS (DELETE FROM jobctl.job_tracks WHERE job_id IN (SELECT id FROM claimed))
        SELECT * FROM claimed
        """
    }

    /// What a claim binds, and how its rows become claimed jobs.
    struct Claim: Sendable {
        static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .int8, .int8]

        let worker: String
        let limit: Int
        let leaseMilliseconds: Int64
        /// The injected clock's time, or `nil` for the database's.
        var now: Int64?

        /// The same claim at `time`.
        func at(_ time: Int64) -> Claim {
            var claim = self
            claim.now = time
            return claim
        }

        var bindings: PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(worker)
            bindings.append(Int64(limit))
            bindings.append(leaseMilliseconds)
            bindings.append(now)
            return bindings
        }

        func decode(_ row: PostgresRow) throws -> ClaimedJob {
            let access = row.makeRandomAccess()
            let job = try Stored(access).job(tracks: [])
            let token = try access["lease_token"].decode(String.self)
            return ClaimedJob(
                job: job,
                lease: Lease(
                    jobID: job.id,
                    token: token,
                    attempt: job.attempt,
                    worker: worker,
                    // A child's end must also reach its parent: in a transaction, as a webhook's.
                    hasWebhook: job.webhook != nil || job.parent != nil
                )
            )
        }
    }

    /// The usual claim: queued jobs that are due.
    struct ClaimQueued: PostgresPreparedStatement {
        static let name = "jobctl_claim_queued_v1"
        static let sql = claimSQL(where: "j.status = 'unknown' AND j.run_at <= t.now")
        static let bindingDataTypes = Claim.bindingDataTypes
        let claim: Claim
        func makeBindings() throws -> PostgresBindings { claim.bindings }
        func decodeRow(_ row: PostgresRow) throws -> ClaimedJob { try claim.decode(row) }
    }

    /// After settling expired leases: queued jobs and dead workers' jobs compete by priority,
    /// then age (the protocol's order; the OR forgoes the partial index, in this rare case only).
    struct ClaimQueuedOrExpired: PostgresPreparedStatement {
        static let name = "jobctl_claim_queued_or_expired_v1"
        static let sql = claimSQL(
            where:
                "((j.status = 'unknown' AND j.run_at <= t.now) OR (j.status = 'reading' AND j.lease_expires_at <= t.now))"
        )
        static let bindingDataTypes = Claim.bindingDataTypes
        let claim: Claim
        func makeBindings() throws -> PostgresBindings { claim.bindings }
        func decodeRow(_ row: PostgresRow) throws -> ClaimedJob { try claim.decode(row) }
    }

    /// Completes a batch: one fenced UPDATE (each row matched by its own id and lease token),
    /// the tracks replaced; returns the accepted ids, whether each has a webhook, and the time.
    struct CompleteBatch: PostgresPreparedStatement {
        static let name = "jobctl_complete_batch_v2"
        static let sql = """
            WITH \(clockCTE(parameter: 5)), input AS (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]::jsonb[]) AS i(id, token, result, tracks)
            ), done AS (
                UPDATE jobctl.jobs j SET status = 'completed', progress = 1, result = i.result, error_code = NULL, error_message = NULL,
                    error_retryable = NULL, finished_at = t.now, lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE,
                    updated_at = t.now
                FROM t, input i WHERE j.id = i.id AND j.lease_token = i.token AND j.status = 'reading'
                RETURNING j.id, (j.webhook IS NOT NULL OR j.parent_id IS NOT NULL) AS has_webhook, t.now, i.tracks
            ), \(replaceTracksCTEs)
            SELECT id, has_webhook, now FROM done
            """
        static let bindingDataTypes: [PostgresDataType] = [.textArray, .textArray, .textArray, .textArray, .int8]

        let completions: [CompletionBatch.Completion]
        let now: Int64?

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(completions.map(\.lease.jobID.rawValue))
            bindings.append(completions.map(\.lease.token))
            bindings.append(completions.map(\.result))
            bindings.append(completions.map(\.tracks))
            bindings.append(now)
            return bindings
        }

        struct Row: Sendable {
            let id: JobID
            let hasWebhook: Bool
            let now: Int64
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            let (id, hasWebhook, now) = try row.decode((String, Bool, Int64).self)
            return Row(id: JobID(id), hasWebhook: hasWebhook, now: now)
        }
    }
}
