import Foundation
import GRDB
import Queue

// Submitting and reading jobs; listings and counts.
extension SQLiteJobStore {
    // MARK: Submitting and reading

    public func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        let now = self.now
        let id = JobID.make(at: clock())
        return try await write { db in
            if let key = request.idempotencyKey,
                let existing = try Row.fetchOne(
                    db,
                    sql: "SELECT \(StoredColumns.job) FROM jobs WHERE idempotency_key = ?",
                    arguments: [key]
                )
            {
                return (try SQLiteJobStore.job(existing, db), false)
            }
            try SQLiteJobStore.insert(request, id: id, now: now, db)
            return (try SQLiteJobStore.job(id, db), true)
        }
    }

    /// Queues many jobs in one transaction, for benchmarks and bulk loads: workers see them
    /// all at once. Idempotency keys are written, not looked up (a duplicate fails the whole
    /// transaction). Returns the store's clock just before the commit.
    package func submitAll(_ requests: [JobRequest]) async throws -> Date {
        let now = self.now
        let ids = requests.map { _ in JobID.make(at: clock()) }
        return try await write { db in
            for (request, id) in zip(requests, ids) { try SQLiteJobStore.insert(request, id: id, now: now, db) }
            return self.clock()
        }
    }

    /// The row `submit` writes.
    static func insert(_ request: JobRequest, id: JobID, now: Int64, createdAt: Int64? = nil, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO jobs (id, kind, status, input, output, preset, preset_settings, format, range_start, range_duration,
                    priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key, owner, created_at,
                    updated_at, parent_id, child_index, role)
                VALUES (?, ?, 'unknown', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                id.rawValue, request.kind.rawValue, request.input, request.output, request.preset,
                try StoredJSON.encode(request.presetSettings),
                request.format, request.range?.start, request.range?.duration, request.priority,
                request.maxAttempts, request.maxAttempts,
                now, request.webhook, try StoredJSON.encode(request.metadata), request.idempotencyKey, request.owner,
                createdAt ?? now, now, request.parent?.rawValue, request.childIndex, try request.role.stored(),
            ]
        )
    }

    public func job(_ id: JobID) async throws -> Job? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT \(StoredColumns.job) FROM jobs WHERE id = ?"),
                    arguments: [id.rawValue]
                )
            else { return nil }
            return try SQLiteJobStore.job(row, db)
        }
    }

    public func jobs(_ query: JobQuery) async throws -> [Job] {
        let ids = try query.ids.map { String(decoding: try JSONEncoder().encode($0.map(\.rawValue)), as: UTF8.self) }
        // Only the clauses a query has, each bare: SQLite then picks the index that serves it
        // (watched ids through the primary key, a key's jobs of a status through
        // jobs_by_owner_status, the rest walking jobs_by_time) instead of one plan for all.
        var filters: [String] = []
        var arguments: [DatabaseValue] = []
        func bind(_ value: some DatabaseValueConvertible) -> String {
            arguments.append(value.databaseValue)
            return "?"
        }
        if let ids { filters.append("id IN (SELECT value FROM json_each(\(bind(ids))))") }
        if let status = query.status?.rawValue { filters.append("status = \(bind(status))") }
        if let owner = query.owner { filters.append("owner = \(bind(owner))") }
        if let after = query.after {
            filters.append("(created_at, id) < (\(bind(after.createdAt)), \(bind(after.id.rawValue)))")
        }
        if let parent = query.parent?.rawValue { filters.append("parent_id = \(bind(parent))") }
        if query.topLevelOnly { filters.append("parent_id IS NULL") }
        // SQLite's LIKE ignores ASCII case by itself: no `lower()` per row (half a text
        // search's time at a million jobs).
        let conditions = JobConditionSQL.clause(query.conditions, placeholder: { _ in "?" }, lowercase: { $0 })
        for argument in conditions.arguments {
            switch argument {
            case .text(let text): arguments.append(text.databaseValue)
            case .integer(let number): arguments.append(number.databaseValue)
            }
        }
        filters.append(conditions.sql)
        let limit = query.limit
        return try await read { [filters, arguments] db in
            var filters = filters
            var arguments = arguments
            if let search = Self.searchClause(query.conditions, db) {
                filters.append(search.sql)
                arguments.append(search.match.databaseValue)
            }
            arguments.append(limit.databaseValue)
            let sql = """
                SELECT \(StoredColumns.job) FROM jobs WHERE \(filters.joined(separator: " AND "))
                ORDER BY created_at DESC, id DESC LIMIT ?
                """
            // Only the fixed shapes (no dashboard filter) are kept prepared: each connection
            // keeps a cached statement for good, and filters have as many shapes as people type.
            let statement = query.conditions.isEmpty ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
            return try Row.fetchAll(statement, arguments: StatementArguments(arguments)).map {
                try SQLiteJobStore.job($0, db)
            }
        }
    }

    /// The statements a reader connection holds prepared (SQLite's `sqlite_stmt`, which
    /// Debian's SQLite has): what a test reads to see that filters do not pile up.
    func preparedStatements() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_stmt") ?? 0 }
    }

    public func ping() async throws {
        _ = try await read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    public func statusCounts(owner: String?) async throws -> [JobStatus: Int] {
        try await read { db in
            var counts: [JobStatus: Int] = [:]
            // A tenant's counts come from `jobs_by_owner_status`.
            let rows =
                if let owner {
                    try Row.fetchAll(
                        db,
                        sql: "SELECT status, COUNT(*) AS count FROM jobs WHERE owner = ? GROUP BY status",
                        arguments: [owner]
                    )
                } else {
                    try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS count FROM jobs GROUP BY status")
                }
            for row in rows {
                if let status = JobStatus(rawValue: row["status"]) { counts[status] = row["count"] }
            }
            return counts
        }
    }
}
