import Foundation
import GRDB
import Queue
import QueueMigrations

/// The job table in a SQLite file, shared by any number of processes on one host.
///
/// WAL mode, a busy timeout (writers queue up instead of failing with "database is locked"),
/// `synchronous = FULL` (a submitted job survives a power cut). Every write is one `IMMEDIATE`
/// transaction; a claim is one `UPDATE … RETURNING`. Every write about a running job checks
/// its lease token, so a worker that lost its lease changes nothing (fencing).
public final class SQLiteJobStore: JobStore, JobStoreChangeNotifying, WebhookOutbox {
    private let pool: DatabasePool
    private let commits: GroupCommit
    private let clock: @Sendable () -> Date
    public let path: String

    /// Opens (creating if needed) and migrates the database at `path`.
    /// - Parameter clock: the store's notion of now (tests move it to expire leases).
    public init(path: String, busyTimeout: TimeInterval = 60, clock: @escaping @Sendable () -> Date = { Date() }) throws {
        self.path = path
        self.clock = clock
        var configuration = Configuration()
        // SQLite's own busy handler sleeps 1, 2, 5, 10… ms: with several worker processes that
        // is most of the time spent. Wait in short steps instead, up to `busyTimeout`.
        let maximumTries = Int(busyTimeout * 1000 / 0.25)
        configuration.busyMode = .callback { tries in
            guard tries < maximumTries else { return false }
            usleep(tries < 20 ? 50 : 250)
            return true
        }
        configuration.label = "jobctl"
        try SQLiteJobStore.requireSingleName(path)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch {
            throw SQLiteJobStore.storeError(error, path: path, doing: "cannot open the job database \(path)")
        }
        commits = GroupCommit(pool: pool)
        try SQLiteJobStore.migrate(pool, path: path)
    }

    public func migrate() async throws {
        try SQLiteJobStore.migrate(pool, path: path)
    }

    /// Applies the migrations not applied yet, all in one `IMMEDIATE` transaction, so processes
    /// starting together never race. A database migrated by a newer jobctl is refused.
    static func migrate(_ pool: DatabasePool, path: String) throws {
        do {
            try pool.write { db in
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
                let applied = Set(try String.fetchAll(db, sql: "SELECT name FROM schema_migrations"))
                let known = Set(Migrations.sqlite.map(\.name))
                if let unknown = applied.subtracting(known).sorted().first {
                    throw JobStoreError(.unavailable, "the job database \(path) has migration \(unknown), from a newer jobctl; upgrade jobctl")
                }
                for migration in Migrations.sqlite where !applied.contains(migration.name) {
                    try db.execute(sql: migration.sql)
                    try db.execute(sql: "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", arguments: [migration.name, Date().milliseconds])
                }
            }
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw storeError(error, path: path, doing: "cannot migrate the job database \(path)")
        }
    }

    private var now: Int64 { clock().milliseconds }

    // MARK: Submitting and reading

    public func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        let now = self.now
        let id = JobID.make(at: clock())
        return try await write { db in
            if let key = request.idempotencyKey,
                let existing = try Row.fetchOne(db, sql: "SELECT \(Column.list) FROM jobs WHERE idempotency_key = ?", arguments: [key])
            {
                return (try SQLiteJobStore.job(existing, db), false)
            }
            try db.execute(
                sql: """
                    INSERT INTO jobs (id, kind, status, input, output, preset, preset_settings, format, range_start, range_duration,
                        priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key, created_at, updated_at)
                    VALUES (?, ?, 'unknown', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id.rawValue, request.kind.rawValue, request.input, request.output, request.preset, try encodeJSON(request.presetSettings),
                    request.format, request.range?.start, request.range?.duration, request.priority, request.maxAttempts, request.maxAttempts,
                    now, request.webhook, try encodeJSON(request.metadata), request.idempotencyKey, now, now,
                ]
            )
            return (try SQLiteJobStore.job(id, db), true)
        }
    }

    public func job(_ id: JobID) async throws -> Job? {
        try await read { db in
            guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Column.list) FROM jobs WHERE id = ?"), arguments: [id.rawValue]) else { return nil }
            return try SQLiteJobStore.job(row, db)
        }
    }

    public func jobs(status: JobStatus?, limit: Int) async throws -> [Job] {
        try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT \(Column.list) FROM jobs WHERE ?1 IS NULL OR status = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
                arguments: [status?.rawValue, limit]
            )
            return try rows.map { try SQLiteJobStore.job($0, db) }
        }
    }

    public func statusCounts() async throws -> [JobStatus: Int] {
        try await read { db in
            var counts: [JobStatus: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT status, COUNT(*) FROM jobs GROUP BY status") {
                if let status = JobStatus(rawValue: row[0]) { counts[status] = row[1] }
            }
            return counts
        }
    }

    // MARK: Claiming and running

    public func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        let now = self.now
        let expires = now + lease.milliseconds
        // A read first: idle workers polling never take the write lock.
        let claimable = try await read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_queued WHERE status = 'unknown' AND run_at <= :now)
                        OR EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_running WHERE status = 'reading' AND lease_expires_at <= :now)
                    """,
                arguments: ["now": now]
            ) ?? false
        }
        guard claimable else { return [] }
        return try await write { db in
            // Each source takes its first `limit` rows in index order (INDEXED BY: without
            // statistics the planner would sort the whole queue), so a claim reads a few rows
            // however long the queue is. Jobs whose worker vanished: cancelled if that was
            // asked, failed when out of attempts.
            var ended = try String.fetchAll(
                db.cachedStatement(sql: """
                    UPDATE jobs SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0, finished_at = :now,
                        updated_at = :now
                    WHERE status = 'reading' AND lease_expires_at <= :now AND cancel_requested = 1
                    RETURNING id
                    """),
                arguments: ["now": now]
            )
            ended += try String.fetchAll(
                db.cachedStatement(sql: """
                    UPDATE jobs SET status = 'failed', lease_token = NULL, lease_expires_at = NULL, finished_at = :now, updated_at = :now,
                        error_code = 'lease_lost', error_retryable = 1,
                        error_message = 'its worker ' || coalesce(worker, '?') || ' stopped renewing the lease on attempt '
                            || attempt || ' of ' || max_attempts
                    WHERE status = 'reading' AND lease_expires_at <= :now AND attempt >= max_attempts
                    RETURNING id
                    """),
                arguments: ["now": now]
            )
            for id in ended { try SQLiteJobStore.enqueueEvent(for: JobID(id), db, now: now) }
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    UPDATE jobs SET status = 'reading', attempt = attempt + 1, worker = :worker, lease_token = lower(hex(randomblob(16))),
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
                    RETURNING \(Column.list)
                    """),
                arguments: ["worker": worker.name, "expires": expires, "now": now, "limit": limit]
            )
            try db.run(sql: "DELETE FROM job_tracks WHERE job_id IN (SELECT value FROM json_each(?))", arguments: [
                try encodeJSON(rows.map { $0["id"] as String }),
            ])
            return try rows.map { row in
                let job = try SQLiteJobStore.job(row, tracks: [])
                return ClaimedJob(job: job, lease: Lease(jobID: job.id, token: row[Column.leaseToken], attempt: job.attempt, worker: worker.name))
            }
            .sorted(by: ClaimedJob.claimOrder)
        }
    }

    public func heartbeat(_ lease: Lease, progress: Double, tracks: [JobTrack], extendBy: Duration) async throws -> LeaseState {
        let now = self.now
        return try await write { db in
            let cancelRequested = try Bool.fetchOne(
                db.cachedStatement(sql: """
                    UPDATE jobs SET lease_expires_at = ?, progress = max(progress, ?), updated_at = ?
                    WHERE id = ? AND lease_token = ? AND status = 'reading'
                    RETURNING cancel_requested
                    """),
                arguments: [now + extendBy.milliseconds, min(max(progress, 0), 1), now, lease.jobID.rawValue, lease.token]
            )
            guard let cancelRequested else { return .lost }
            try SQLiteJobStore.replaceTracks(tracks, of: lease.jobID, db)
            return .held(cancelRequested: cancelRequested)
        }
    }

    public func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID> {
        guard !leases.isEmpty else { return [] }
        return try await read { db in
            let ids = try String.fetchAll(
                db,
                sql: "SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND cancel_requested = 1",
                arguments: [try encodeJSON(leases.map(\.jobID.rawValue))]
            )
            return Set(ids.map { JobID($0) })
        }
    }

    public func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool {
        try await finish(lease, tracks: tracks, sql: """
            status = 'completed', progress = 1, result = :result, error_code = NULL, error_message = NULL, error_retryable = NULL,
            finished_at = :now
            """, arguments: ["result": try encodeJSON(result)])
    }

    public func fail(_ lease: Lease, error: JobError, retryDelay: Duration) async throws -> Bool {
        // A retryable failure of a job whose cancellation was asked for ends it cancelled.
        try await finish(lease, tracks: nil, sql: """
            status = CASE WHEN :retryable AND cancel_requested = 1 THEN 'cancelled'
                WHEN :retryable AND attempt < max_attempts THEN 'unknown' ELSE 'failed' END,
            run_at = CASE WHEN :retryable AND attempt < max_attempts THEN :now + :delay ELSE run_at END,
            finished_at = CASE WHEN :retryable AND cancel_requested = 0 AND attempt < max_attempts THEN NULL ELSE :now END,
            error_code = :code, error_message = :message, error_retryable = :retryable
            """, arguments: ["retryable": error.retryable, "delay": retryDelay.milliseconds, "code": error.code, "message": error.message])
    }

    public func confirmCancelled(_ lease: Lease) async throws -> Bool {
        try await finish(lease, tracks: nil, sql: "status = 'cancelled', finished_at = :now", arguments: [:])
    }

    public func release(_ lease: Lease) async throws -> Bool {
        // Handing back a job whose cancellation was asked for ends it cancelled.
        try await finish(lease, tracks: nil, sql: """
            status = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'unknown' END,
            finished_at = CASE WHEN cancel_requested = 1 THEN :now ELSE NULL END,
            attempt = CASE WHEN cancel_requested = 1 THEN attempt ELSE attempt - 1 END, run_at = :now, progress = 0
            """, arguments: [:])
    }

    /// Ends the current attempt with `sql`'s assignments, if `lease` still holds it.
    private func finish(_ lease: Lease, tracks: [JobTrack]?, sql assignments: String, arguments: StatementArguments) async throws -> Bool {
        let now = self.now
        var merged = arguments
        _ = merged.append(contentsOf: ["now": now, "id": lease.jobID.rawValue, "token": lease.token])
        let all = merged
        return try await write { db in
            try db.run(
                sql: """
                    UPDATE jobs SET \(assignments), lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0, updated_at = :now
                    WHERE id = :id AND lease_token = :token AND status = 'reading'
                    """,
                arguments: all
            )
            guard db.changesCount == 1 else { return false }
            if let tracks { try SQLiteJobStore.replaceTracks(tracks, of: lease.jobID, db) }
            try SQLiteJobStore.enqueueEvent(for: lease.jobID, db, now: now)
            return true
        }
    }

    // MARK: Cancel and retry

    public func cancel(_ id: JobID) async throws -> CancelOutcome {
        let now = self.now
        return try await write { db in
            let status = try SQLiteJobStore.status(of: id, db)
            switch status {
            case .unknown:
                try db.execute(
                    sql: "UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ? WHERE id = ?",
                    arguments: [now, now, id.rawValue]
                )
                try SQLiteJobStore.enqueueEvent(for: id, db, now: now)
                return .cancelled(try SQLiteJobStore.job(id, db))
            case .reading:
                try db.execute(sql: "UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?", arguments: [now, id.rawValue])
                return .requested(try SQLiteJobStore.job(id, db))
            case .completed, .failed, .cancelled:
                throw JobStoreError(.conflict(status), "job \(id) has already ended (\(status)); nothing to cancel")
            }
        }
    }

    public func retry(_ id: JobID) async throws -> Job {
        let now = self.now
        return try await write { db in
            let status = try SQLiteJobStore.status(of: id, db)
            guard JobStateMachine.next(status, on: .retry, attempt: 0, maxAttempts: 1) == .unknown else {
                throw JobStoreError(.conflict(status), "job \(id) is \(status); only failed or cancelled jobs can be retried")
            }
            try db.execute(
                sql: """
                    UPDATE jobs SET status = 'unknown', run_at = ?, max_attempts = attempt + attempt_budget, progress = 0, result = NULL,
                        error_code = NULL, error_message = NULL, error_retryable = NULL, cancel_requested = 0, finished_at = NULL, updated_at = ?
                    WHERE id = ?
                    """,
                arguments: [now, now, id.rawValue]
            )
            return try SQLiteJobStore.job(id, db)
        }
    }

    // MARK: Workers

    public func workerStarted(_ worker: WorkerIdentity) async throws {
        let now = self.now
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO workers (name, host, pid, version, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
                        started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                    """,
                arguments: [worker.name, worker.host, worker.pid, worker.version, now, now]
            )
        }
    }

    public func workerHeartbeat(_ worker: WorkerIdentity) async throws {
        let now = self.now
        try await write { db in
            try db.execute(sql: "UPDATE workers SET heartbeat_at = ? WHERE name = ?", arguments: [now, worker.name])
        }
    }

    public func workerStopped(_ worker: WorkerIdentity) async throws {
        let now = self.now
        try await write { db in
            try db.execute(sql: "UPDATE workers SET stopped_at = ?, heartbeat_at = ? WHERE name = ?", arguments: [now, now, worker.name])
        }
    }

    // MARK: Webhook outbox

    /// Writes the event for a job that just reached a terminal status, if it has a webhook: the
    /// body is serialized here, once, and every attempt sends exactly these bytes.
    private static func enqueueEvent(for id: JobID, _ db: Database, now: Int64) throws {
        // Most jobs have no webhook: one indexed lookup, no job read.
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT webhook IS NOT NULL FROM jobs WHERE id = ?"), arguments: [id.rawValue]) == true else { return }
        let job = try job(id, db)
        guard job.status.isTerminal, let url = job.webhook else { return }
        let type = "job.\(job.status.rawValue)"
        let body = try Job.makeJSONEncoder(pretty: false).encode(WebhookPayload(type: type, timestamp: Date(milliseconds: now), data: job))
        try db.run(
            sql: """
                INSERT INTO webhook_deliveries (id, job_id, type, url, payload, status, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)
                """,
            arguments: ["msg_" + JobID.make().rawValue.replacingOccurrences(of: "-", with: ""), id.rawValue, type, url,
                        String(decoding: body, as: UTF8.self), now, now, now]
        )
    }

    public func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let now = self.now
        let due = try await read { db in
            try Bool.fetchOne(
                db.cachedStatement(sql: """
                    SELECT EXISTS (SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_due WHERE status = 'pending' AND next_attempt_at <= :now)
                        OR EXISTS (SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_leased WHERE status = 'delivering' AND lease_expires_at <= :now)
                    """),
                arguments: ["now": now]
            ) ?? false
        }
        guard due else { return [] }
        return try await write { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    UPDATE webhook_deliveries SET status = 'delivering', lease_token = lower(hex(randomblob(16))), lease_expires_at = :expires,
                        dispatcher = :dispatcher, updated_at = :now
                    WHERE id IN (
                        SELECT id FROM (
                            SELECT * FROM (SELECT id, next_attempt_at AS due FROM webhook_deliveries INDEXED BY webhook_deliveries_due
                                WHERE status = 'pending' AND next_attempt_at <= :now ORDER BY next_attempt_at LIMIT :limit)
                            UNION ALL
                            SELECT * FROM (SELECT id, lease_expires_at AS due FROM webhook_deliveries INDEXED BY webhook_deliveries_leased
                                WHERE status = 'delivering' AND lease_expires_at <= :now ORDER BY lease_expires_at LIMIT :limit)
                        ) ORDER BY due LIMIT :limit
                    )
                    RETURNING \(DeliveryColumn.list), payload, lease_token
                    """),
                arguments: ["expires": now + lease.milliseconds, "dispatcher": dispatcher, "now": now, "limit": limit]
            )
            return try rows.map { row in
                ClaimedDelivery(
                    delivery: try SQLiteJobStore.delivery(row, log: []), payload: Data((row["payload"] as String).utf8),
                    leaseToken: row["lease_token"], dispatcher: dispatcher
                )
            }
            // RETURNING gives rows in no particular order: longest due first.
            .sorted(by: ClaimedDelivery.dueOrder)
        }
    }

    public func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool {
        let now = self.now
        let (attempt, status, next, deliveredAt): (DeliveryAttempt, DeliveryStatus, Int64?, Int64?) = switch outcome {
        case .delivered(let attempt): (attempt, .delivered, nil, now)
        case .retry(let attempt, let delay): (attempt, .pending, now + delay.milliseconds, nil)
        case .failed(let attempt): (attempt, .failed, nil, nil)
        }
        return try await write { db in
            let number = try Int.fetchOne(
                db.cachedStatement(sql: """
                    UPDATE webhook_deliveries SET attempts = attempts + 1, status = ?, next_attempt_at = ?, delivered_at = ?,
                        last_status_code = ?, last_error = ?, lease_token = NULL, lease_expires_at = NULL, updated_at = ?
                    WHERE id = ? AND lease_token = ? AND status = 'delivering'
                    RETURNING attempts
                    """),
                arguments: [status.rawValue, next, deliveredAt, attempt.statusCode, attempt.error, now, claimed.delivery.id, claimed.leaseToken]
            )
            guard let number else { return false }
            try db.run(
                sql: "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, latency_ms, error, dispatcher) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [claimed.delivery.id, number, attempt.at.milliseconds, attempt.statusCode, attempt.latency, attempt.error, attempt.dispatcher]
            )
            return true
        }
    }

    public func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery] {
        try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT \(DeliveryColumn.list) FROM webhook_deliveries WHERE ?1 IS NULL OR job_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
                arguments: [job?.rawValue, limit]
            )
            return try rows.map { try SQLiteJobStore.delivery($0, log: SQLiteJobStore.attempts(of: $0[DeliveryColumn.id], db)) }
        }
    }

    public func redeliver(_ id: String) async throws -> WebhookDelivery {
        let now = self.now
        return try await write { db in
            guard let status = try String.fetchOne(db, sql: "SELECT status FROM webhook_deliveries WHERE id = ?", arguments: [id]) else {
                throw JobStoreError(.notFound, "no webhook delivery \(id)")
            }
            guard status != DeliveryStatus.delivering.rawValue else {
                throw JobStoreError(.conflict(.reading), "delivery \(id) is being sent right now")
            }
            try db.execute(
                sql: "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, delivered_at = NULL, updated_at = ? WHERE id = ?",
                arguments: [now, now, id]
            )
            let row = try Row.fetchOne(db, sql: "SELECT \(DeliveryColumn.list) FROM webhook_deliveries WHERE id = ?", arguments: [id])!
            return try SQLiteJobStore.delivery(row, log: SQLiteJobStore.attempts(of: id, db))
        }
    }

    private enum DeliveryColumn {
        static let list = "id, job_id, type, url, status, attempts, next_attempt_at, created_at, delivered_at, last_status_code, last_error"
        static let id = 0
    }

    private static func delivery(_ row: Row, log: [DeliveryAttempt]) throws -> WebhookDelivery {
        WebhookDelivery(
            id: row[0], jobID: JobID(row[1] as String), type: row[2], url: row[3],
            status: try StoredValue.decode(row[4] as String, column: "status", row: "webhook delivery \(row[0] as String)"), attempts: row[5],
            nextAttemptAt: (row[6] as Int64?).map(Date.init(milliseconds:)), createdAt: Date(milliseconds: row[7]),
            deliveredAt: (row[8] as Int64?).map(Date.init(milliseconds:)), lastStatusCode: row[9], lastError: row[10], log: log
        )
    }

    private static func attempts(of id: String, _ db: Database) throws -> [DeliveryAttempt] {
        try Row.fetchAll(db, sql: "SELECT attempt, at, status_code, latency_ms, error, dispatcher FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt", arguments: [id])
            .map { DeliveryAttempt(attempt: $0[0], at: Date(milliseconds: $0[1]), statusCode: $0[2], latency: $0[3], error: $0[4], dispatcher: $0[5]) }
    }

    // MARK: Notifications

    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watcher = ChangeWatcher(databasePath: path) { continuation.yield() }
        if watcher == nil { continuation.finish() }
        continuation.onTermination = { _ in watcher?.stop() }
        return stream
    }

    public func workers() async throws -> [WorkerInfo] {
        try await read { db in
            let running = try Row.fetchAll(db, sql: "SELECT worker, id FROM jobs WHERE status = 'reading' ORDER BY started_at")
            var jobs: [String: [JobID]] = [:]
            for row in running { jobs[row[0] as String? ?? "", default: []].append(JobID(row[1] as String)) }
            return try Row.fetchAll(db, sql: "SELECT name, host, pid, version, started_at, heartbeat_at, stopped_at FROM workers ORDER BY heartbeat_at DESC, name")
                .map { row in
                    WorkerInfo(
                        name: row[0], host: row[1], pid: row[2], version: row[3], startedAt: Date(milliseconds: row[4]),
                        heartbeatAt: Date(milliseconds: row[5]), stoppedAt: (row[6] as Int64?).map(Date.init(milliseconds:)),
                        runningJobs: jobs[row[0]] ?? []
                    )
                }
        }
    }

    // MARK: Rows

    private static func status(of id: JobID, _ db: Database) throws -> JobStatus {
        guard let raw = try String.fetchOne(db.cachedStatement(sql: "SELECT status FROM jobs WHERE id = ?"), arguments: [id.rawValue]) else {
            throw JobStoreError(.notFound, "no job \(id)")
        }
        return try StoredValue.decode(raw, column: "status", row: "job \(id)")
    }

    private static func job(_ id: JobID, _ db: Database) throws -> Job {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Column.list) FROM jobs WHERE id = ?"), arguments: [id.rawValue]) else {
            throw JobStoreError(.notFound, "no job \(id)")
        }
        return try job(row, db)
    }

    private static func job(_ row: Row, _ db: Database) throws -> Job {
        let statement = try db.cachedStatement(
            sql: "SELECT idx, source_index, media_type, status, codec, read, written FROM job_tracks WHERE job_id = ? ORDER BY idx"
        )
        let tracks = try Row.fetchAll(statement, arguments: [row[Column.id] as String]).map { track in
            JobTrack(
                index: track[0], sourceIndex: track[1], mediaType: track[2],
                status: try StoredValue.decode(track[3] as String, column: "track status", row: "job \(row[Column.id] as String)"), codec: track[4], read: track[5], written: track[6]
            )
        }
        return try job(row, tracks: tracks)
    }

    /// The job columns every query selects, in this order: rows are read by position (GRDB's
    /// by-name lookup lowercases the name on every access, and claims read many rows).
    private enum Column {
        static let names = [
            "id", "kind", "status", "input", "output", "preset", "preset_settings", "format", "range_start", "range_duration",
            "priority", "attempt", "max_attempts", "progress", "result", "error_code", "error_message", "error_retryable", "webhook",
            "metadata", "idempotency_key", "worker", "cancel_requested", "run_at", "created_at", "started_at", "finished_at", "lease_token",
        ]
        static let list = names.joined(separator: ", ")
        static let id = 0, kind = 1, status = 2, input = 3, output = 4, preset = 5, presetSettings = 6, format = 7, rangeStart = 8
        static let rangeDuration = 9, priority = 10, attempt = 11, maxAttempts = 12, progress = 13, result = 14, errorCode = 15
        static let errorMessage = 16, errorRetryable = 17, webhook = 18, metadata = 19, idempotencyKey = 20, worker = 21
        static let cancelRequested = 22, runAt = 23, createdAt = 24, startedAt = 25, finishedAt = 26, leaseToken = 27
    }

    private static func job(_ row: Row, tracks: [JobTrack]) throws -> Job {
        let errorCode: String? = row[Column.errorCode]
        let rangeStart: Double? = row[Column.rangeStart]
        return Job(
            id: JobID(row[Column.id] as String),
            kind: try StoredValue.decode(row[Column.kind] as String, column: "kind", row: "job \(row[Column.id] as String)"),
            status: try StoredValue.decode(row[Column.status] as String, column: "status", row: "job \(row[Column.id] as String)"),
            input: row[Column.input],
            output: row[Column.output],
            preset: row[Column.preset],
            presetSettings: try decodeJSON(JSONValue.self, row[Column.presetSettings]) ?? .null,
            format: row[Column.format],
            range: rangeStart.map { Job.Range(start: $0, duration: row[Column.rangeDuration]) },
            priority: row[Column.priority],
            attempt: row[Column.attempt],
            maxAttempts: row[Column.maxAttempts],
            progress: row[Column.progress],
            tracks: tracks,
            result: try decodeJSON(JSONValue.self, row[Column.result]),
            error: errorCode.map { JobError(code: $0, message: row[Column.errorMessage] ?? "", retryable: row[Column.errorRetryable]) },
            webhook: row[Column.webhook],
            metadata: try decodeJSON([String: String].self, row[Column.metadata]) ?? [:],
            idempotencyKey: row[Column.idempotencyKey],
            worker: row[Column.worker],
            cancelRequested: row[Column.cancelRequested],
            runAt: Date(milliseconds: row[Column.runAt]),
            createdAt: Date(milliseconds: row[Column.createdAt]),
            startedAt: (row[Column.startedAt] as Int64?).map(Date.init(milliseconds:)),
            finishedAt: (row[Column.finishedAt] as Int64?).map(Date.init(milliseconds:))
        )
    }

    private static func replaceTracks(_ tracks: [JobTrack], of id: JobID, _ db: Database) throws {
        try db.run(sql: "DELETE FROM job_tracks WHERE job_id = ?", arguments: [id.rawValue])
        for track in tracks {
            try db.run(
                sql: "INSERT INTO job_tracks (job_id, idx, source_index, media_type, status, codec, read, written) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: [id.rawValue, track.index, track.sourceIndex, track.mediaType, track.status.rawValue, track.codec, track.read, track.written]
            )
        }
    }

    // MARK: Plumbing

    private func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await commits.write(body)
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw SQLiteJobStore.storeError(error, path: path, doing: "the job database \(path) failed")
        }
    }

    private func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw SQLiteJobStore.storeError(error, path: path, doing: "the job database \(path) failed")
        }
    }

    /// A database error as the store reports it: a damaged file is `corrupt` (no retry can
    /// help), anything else `unavailable`.
    static func storeError(_ error: any Error, path: String, doing what: String) -> JobStoreError {
        if let error = error as? DatabaseError, [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode.primaryResultCode) {
            return JobStoreError(
                .corrupt,
                "the job database \(path) is damaged (\(describe(error))): stop every worker using it, keep a copy, and rebuild it with `sqlite3 \(path) .dump | sqlite3 NEW.sqlite` (docs/operations.md, \"A damaged SQLite database\")"
            )
        }
        if let error = error as? DatabaseError, error.resultCode.primaryResultCode == .SQLITE_CANTOPEN {
            let directory = (path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            let reason = !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue
                ? "the directory \(directory) does not exist"
                : FileManager.default.isWritableFile(atPath: directory) ? describe(error) : "\(directory) is not writable by this user (SQLite needs to create its -wal and -shm files there)"
            return JobStoreError(.unavailable, "\(what): \(reason)")
        }
        return JobStoreError(.unavailable, "\(what): \(describe(error))")
    }

    /// SQLite keeps its write-ahead log beside the *name* a database is opened by: two hard
    /// links are two logs for one file, and writes through one are lost to the other (20 of 40
    /// jobs vanished in a test with two workers). Refuse a file with more than one link.
    static func requireSingleName(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0, info.st_nlink > 1 else { return }
        throw JobStoreError(
            .unavailable,
            "the job database \(path) has \(info.st_nlink) hard links: SQLite must be reached through one path on one host (its write-ahead log follows the name); remove the other links, or use PostgreSQL to share a queue between hosts"
        )
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}

private func encodeJSON<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

private func decodeJSON<T: Decodable>(_ type: T.Type, _ text: String?) throws -> T? {
    guard let text, text != "null" else { return nil }
    // The common empty cases without a decoder (a claim decodes many rows).
    if text == "{}" {
        if T.self == [String: String].self { return [String: String]() as? T }
        if T.self == JSONValue.self { return JSONValue.object([:]) as? T }
    }
    return try JSONDecoder().decode(type, from: Data(text.utf8))
}

extension Database {
    /// Executes `sql` through the statement cache: the hot statements are parsed once.
    fileprivate func run(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
