import Foundation
import Logging
import PostgresNIO
import Queue

// Submitting and reading jobs; listings and counts.
extension PostgresJobStore {
    // MARK: Submitting and reading

    /// The NOTIFY that wakes idle workers is sent after the commit, in a statement of its own,
    /// not inside the transaction: PostgreSQL serializes the commits of notifying transactions
    /// (a global lock held through the WAL flush). It is awaited: a `jobctl submit` exits right
    /// after, and a NOTIFY left to a background task was lost with the process (the fleet tests
    /// caught it: an idle worker polling every 30 s did not wake).
    public func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        let submitted = try await insert(request)
        if submitted.created { await notifyNow("job") }
        return submitted
    }

    private func insert(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        guard request.idempotencyKey != nil else {
            // The usual case: one statement (atomic on its own) that stamps the time and returns
            // the row, instead of a transaction of six round trips.
            let id = JobID.make()
            return try await withConnection { connection in
                let rows = try await connection.query(
                    """
                    WITH \(unescaped: self.clockCTE)
                    INSERT INTO jobctl.jobs (id, kind, status, input, output, preset, preset_settings, format, range_start, range_duration,
                        priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key, owner, created_at, updated_at,
                        role)
                    SELECT \(id.rawValue), \(request.kind.rawValue), 'unknown', \(request.input), \(request.output), \(request.preset),
                        \(try StoredJSON.encode(request.presetSettings)), \(request.format), \(request.range?.start),
                        \(request.range?.duration), \(request.priority), \(request.maxAttempts), \(request.maxAttempts), t.now,
                        \(request.webhook), \(try StoredJSON.encode(request.metadata)), NULL, \(request.owner), t.now, t.now,
                        \(try request.role.stored())
                    FROM t
                    RETURNING \(unescaped: StoredColumns.job)
                    """,
                    logger: self.logger
                )
                for try await row in rows { return (try Stored(row.makeRandomAccess()).job(tracks: []), true) }
                throw JobStoreError(
                    .databaseUnavailable,
                    "the job database \(self.location) did not return the job it stored"
                )
            }
        }
        return try await transaction { connection in
            let now = try await self.currentTime(connection)
            if let key = request.idempotencyKey {
                // Serialize submits with the same key (an advisory lock on its hash).
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(key)))", logger: self.logger)
                if let existing = try await self.firstJob(
                    "SELECT \(unescaped: StoredColumns.job) FROM jobctl.jobs WHERE idempotency_key = \(key)",
                    connection
                ) {
                    return (existing, false)
                }
            }
            let id = JobID.make(at: Date(milliseconds: now))
            try await connection.query(
                """
                INSERT INTO jobctl.jobs (id, kind, status, input, output, preset, preset_settings, format, range_start, range_duration,
                    priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key, owner, created_at, updated_at,
                    role)
                VALUES (\(id.rawValue), \(request.kind.rawValue), 'unknown', \(request.input), \(request.output), \(request.preset),
                    \(try StoredJSON.encode(request.presetSettings)), \(request.format), \(request.range?.start), \(request.range?.duration),
                    \(request.priority), \(request.maxAttempts), \(request.maxAttempts), \(now), \(request.webhook),
                    \(try StoredJSON.encode(request.metadata)), \(request.idempotencyKey), \(request.owner), \(now), \(now),
                    \(try request.role.stored()))
                """,
                logger: self.logger
            )
            return (try await self.job(id, connection), true)
        }
    }

    public func job(_ id: JobID) async throws -> Job? {
        try await withConnection { connection in
            try await self.firstJob(
                "SELECT \(unescaped: StoredColumns.job) FROM jobctl.jobs WHERE id = \(id.rawValue)",
                connection
            )
        }
    }

    public func jobs(_ query: JobQuery) async throws -> [Job] {
        var bindings = PostgresBindings(capacity: 8 + query.conditions.count)
        func bind(_ value: some PostgresNonThrowingEncodable & Sendable) -> String {
            bindings.append(value)
            return "$\(bindings.count)"
        }
        var filters: [String] = []
        // Watched ids drive the lookup through the primary key; a listing walks the time index.
        if let ids = query.ids?.map(\.rawValue) { filters.append("id = ANY(\(bind(ids))::text[])") }
        if let status = query.status?.rawValue { filters.append("status = \(bind(status))") }
        if let owner = query.owner { filters.append("owner = \(bind(owner))") }
        if let after = query.after {
            filters.append("(created_at, id) < (\(bind(after.createdAt))::bigint, \(bind(after.id.rawValue))::text)")
        }
        if let parent = query.parent?.rawValue { filters.append("parent_id = \(bind(parent))") }
        if query.topLevelOnly { filters.append("parent_id IS NULL") }
        let offset = bindings.count
        let conditions = JobConditionSQL.clause(
            query.conditions,
            placeholder: { "$\($0 + offset + 1)" },
            lowercase: { "lower(\($0) COLLATE \"C\")" }
        )
        for argument in conditions.arguments {
            switch argument {
            case .text(let text): bindings.append(text)
            case .integer(let number): bindings.append(number)
            }
        }
        filters.append(conditions.sql)
        let limit = bind(query.limit)
        let sql = """
            SELECT \(StoredColumns.job) FROM jobctl.jobs WHERE \(filters.joined(separator: " AND "))
            ORDER BY created_at DESC, id DESC LIMIT \(limit)
            """
        let statement = PostgresQuery(unsafeSQL: sql, binds: bindings)
        return try await withConnection { connection in
            let rows = try await connection.query(statement, logger: self.logger)
            var jobs: [Job] = []
            for try await row in rows { jobs.append(try Stored(row.makeRandomAccess()).job(tracks: [])) }
            return try await self.attachTracks(jobs, connection)
        }
    }

    public func ping() async throws {
        try await withConnection { connection in
            _ = try await connection.query("SELECT 1", logger: self.logger).collect()
        }
    }

    public func statusCounts(owner: String?) async throws -> [JobStatus: Int] {
        try await withConnection { connection in
            var counts: [JobStatus: Int] = [:]
            // A tenant's counts come from `jobs_by_owner_status`.
            let query: PostgresQuery =
                if let owner {
                    "SELECT status, COUNT(*) FROM jobctl.jobs WHERE owner = \(owner) GROUP BY status"
                } else {
                    "SELECT status, COUNT(*) FROM jobctl.jobs GROUP BY status"
                }
            for try await (status, count) in try await connection.query(query, logger: self.logger)
                .decode((String, Int).self)
            {
                if let status = JobStatus(rawValue: status) { counts[status] = count }
            }
            return counts
        }
    }
}
