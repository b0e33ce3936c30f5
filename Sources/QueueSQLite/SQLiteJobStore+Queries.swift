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
                    updated_at, parent_id, child_index)
                VALUES (?, ?, 'unknown', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                id.rawValue, request.kind.rawValue, request.input, request.output, request.preset,
                try StoredJSON.encode(request.presetSettings),
                request.format, request.range?.start, request.range?.duration, request.priority,
                request.maxAttempts, request.maxAttempts,
                now, request.webhook, try StoredJSON.encode(request.metadata), request.idempotencyKey, request.owner,
                createdAt ?? now, now, request.parent?.rawValue, request.childIndex,
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
        // Watched ids drive the lookup through the primary key; a listing walks the time index.
        let watched = ids == nil ? "" : "id IN (SELECT value FROM json_each(?6)) AND"
        // The dashboard's conditions are numbered after the eight fixed arguments.
        let conditions = JobConditionSQL.clause(query.conditions) { "?\($0 + 9)" }
        return try await read { db in
            var arguments: [(any DatabaseValueConvertible)?] = [
                query.status?.rawValue, query.owner, query.after?.createdAt, query.after?.id.rawValue,
                query.limit, ids, query.parent?.rawValue, query.topLevelOnly,
            ]
            for argument in conditions.arguments {
                switch argument {
                case .text(let text): arguments.append(text)
                case .integer(let number): arguments.append(number)
                }
            }
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(StoredColumns.job) FROM jobs
                        WHERE \(watched) (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR owner = ?2)
                            AND (?3 IS NULL OR (created_at, id) < (?3, ?4)) AND (?7 IS NULL OR parent_id = ?7)
                            AND (?8 = 0 OR parent_id IS NULL) AND \(conditions.sql)
                        ORDER BY created_at DESC, id DESC LIMIT ?5
                        """
                ),
                arguments: StatementArguments(arguments)
            )
            return try rows.map { try SQLiteJobStore.job($0, db) }
        }
    }

    public func ping() async throws {
        _ = try await read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    public func statusCounts() async throws -> [JobStatus: Int] {
        try await read { db in
            var counts: [JobStatus: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) AS count FROM jobs GROUP BY status") {
                if let status = JobStatus(rawValue: row["status"]) { counts[status] = row["count"] }
            }
            return counts
        }
    }
}
