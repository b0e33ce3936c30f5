import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Queue
import QueueMigrations
import Synchronization

/// The job table in PostgreSQL, shared by a fleet of workers on many hosts (docs/spec.md §5).
///
/// The same semantics as `SQLiteJobStore`, the same conformance suites. Claims take rows with
/// `FOR UPDATE SKIP LOCKED` inside `UPDATE … RETURNING`, so concurrent claimers never wait for
/// each other nor get the same attempt. Every write about a running job checks its lease token.
/// Times come from the database's clock (one clock for the whole fleet) unless a clock is
/// injected (tests). `pg_notify('jobctl', …)` on every change a worker cares about;
/// `changes()` listens, reconnecting after a lost connection.
///
/// The client must run: use `withStore(url:…)`, or run the store as a service.
public final class PostgresJobStore: JobStore, JobStoreChangeNotifying, WebhookOutbox {
    public static let channel = "jobctl"

    let client: PostgresClient
    private let problems: ConnectionProblems
    /// How long an operation waits for a connection before it fails with the reason.
    private let connectionWait: Duration
    private let listening = Mutex(Listening())
    private let clock: (@Sendable () -> Date)?
    private let logger: Logger
    /// For messages: the URL without its password.
    public let location: String

    /// - Parameter clock: `nil` (production): the database's clock; tests inject their own.
    /// - Parameter connectionWait: how long an operation waits for a connection before it fails
    ///   with the reason (the server down, refused, a certificate not trusted…).
    public init(
        url: String, clock: (@Sendable () -> Date)? = nil, connectionWait: Duration = .seconds(15),
        logger: Logger = Logger(label: "jobctl.postgres")
    ) throws {
        let configuration = try PostgresJobStore.configuration(from: url)
        let problems = ConnectionProblems()
        client = PostgresClient(configuration: configuration, backgroundLogger: Self.backgroundLogger(logger, problems: problems))
        self.problems = problems
        self.connectionWait = connectionWait
        self.clock = clock
        self.logger = logger
        location = JobRequest.redactingCredentials(url)
    }

    /// Runs the client's connection pool until `body` returns; migrates first.
    public static func withStore<T: Sendable>(
        url: String, clock: (@Sendable () -> Date)? = nil, logger: Logger = Logger(label: "jobctl.postgres"),
        _ body: @escaping @Sendable (PostgresJobStore) async throws -> T
    ) async throws -> T {
        let store = try PostgresJobStore(url: url, clock: clock, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await store.client.run()
                return nil
            }
            defer { group.cancelAll() }
            try await store.migrate()
            return try await body(store)
        }
    }

    /// The pool's own logger: without its warning about leases asked for before `run()` has
    /// begun (`withStore` starts both at once, and the lease simply waits for the pool), and
    /// keeping the last reason a connection could not be made, for the error a command shows.
    private static func backgroundLogger(_ logger: Logger, problems: ConnectionProblems) -> Logger {
        let level = logger.logLevel
        return Logger(label: logger.label) { _ in PoolLogHandler(wrapped: logger.handler, problems: problems, level: level) }
    }

    /// The last reason the pool gave for not connecting, until a connection succeeds. A reason
    /// is final when waiting will not help: the server refused us (no such database or role, a
    /// wrong password) or its certificate is not trusted.
    final class ConnectionProblems: Sendable {
        private let last = Mutex<(reason: String, final: Bool, at: ContinuousClock.Instant)?>(nil)
        var lastFailure: (reason: String, final: Bool, at: ContinuousClock.Instant)? { last.withLock { $0 } }
        func failed(_ failure: (reason: String, final: Bool)) { last.withLock { $0 = (failure.reason, failure.final, .now) } }
        func connected() { last.withLock { $0 = nil } }
    }

    private struct PoolLogHandler: LogHandler {
        var wrapped: any LogHandler
        let problems: ConnectionProblems
        /// The level asked for by the user; the pool's info events are read, not all shown.
        var level: Logger.Level
        var logLevel: Logger.Level {
            get { min(level, .info) }
            set { level = newValue }
        }
        var metadata: Logger.Metadata {
            get { wrapped.metadata }
            set { wrapped.metadata = newValue }
        }
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { wrapped[metadataKey: key] }
            set { wrapped[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            let message = "\(event.message)"
            if message == "Connection creation failed", let error = event.metadata?["psql_error"] {
                // Reported once, in the error of the operation that waited (the pool retries often).
                problems.failed(PostgresJobStore.connectionFailure("\(error)"))
                if level > .debug { return }
            } else if message == "Connection established" {
                problems.connected()
            }
            if event.level == .warning, message.hasPrefix("Trying to lease connection from `PostgresClient`") { return }
            if event.level >= level { wrapped.log(event: event) }
        }
    }

    /// A person's reading of the pool's description of a failed connection attempt, and whether
    /// it is final.
    static func connectionFailure(_ text: String) -> (reason: String, final: Bool) {
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return ("its TLS certificate is not trusted (give the CA with sslrootcert=PATH, or use sslmode=require to encrypt without checking the certificate)", true)
        }
        if text.contains("Connection refused") { return ("connection refused (is PostgreSQL running and listening on that host and port?)", false) }
        if text.contains("UnknownHost") { return ("the host name does not resolve", false) }
        if text.contains("connectTimeout") || text.contains("imeout") {
            return ("no answer within 10 s (a firewall, or the wrong host or port?)", false)
        }
        if text.contains("code: server"), let start = text.range(of: "message: ") {
            let rest = text[start.upperBound...]
            let end = rest.range(of: ", routine:")?.lowerBound ?? rest.range(of: "]")?.lowerBound ?? rest.endIndex
            // The server starting up or shutting down is worth waiting for.
            return (String(rest[..<end]), !text.contains("sqlState: 57P"))
        }
        return (String(text.prefix(300)), false)
    }

    /// Runs the connection pool (as a service of the worker's group).
    public func run() async { await client.run() }

    /// `postgres://user:password@host:port/database?sslmode=…&sslrootcert=PATH`, with libpq's
    /// meanings: `disable` (no TLS); `prefer` (the default: TLS if the server offers it) and
    /// `require` (TLS or nothing) encrypt without checking the certificate, as libpq does, so a
    /// server with a self-signed certificate (Debian's default) works; `verify-ca` checks the
    /// certificate against `sslrootcert` (else the system's roots); `verify-full` the host name too.
    package static func configuration(from url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme?.lowercased() ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw JobStoreError(.unavailable, "\(JobRequest.redactingCredentials(url)) is not a postgres://user:password@host:port/database URL")
        }
        func parameter(_ name: String) -> String? { components.queryItems?.first { $0.name == name }?.value }
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate = parameter("sslrootcert") {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw JobStoreError(.unavailable, "sslrootcert \(rootCertificate) cannot be read")
            }
            tlsConfiguration.trustRoots = .file(rootCertificate)
        }
        let mode = parameter("sslmode") ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable":
            tls = .disable
        case "allow", "prefer", "require":
            tlsConfiguration.certificateVerification = .none
            tls = mode == "require" ? .require(tlsConfiguration) : .prefer(tlsConfiguration)
        case "verify-ca":
            tlsConfiguration.certificateVerification = .noHostnameVerification
            tls = .require(tlsConfiguration)
        case "verify-full":
            tlsConfiguration.certificateVerification = .fullVerification
            tls = .require(tlsConfiguration)
        default:
            throw JobStoreError(.unavailable, "sslmode=\(mode) is not one of disable, prefer, require, verify-ca, verify-full")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: tls
        )
        configuration.options.maximumConnections = 16
        return configuration
    }

    // MARK: Schema

    /// Applies the migrations not applied yet, in one transaction under an advisory lock, so
    /// workers starting together never race. A database migrated by a newer jobctl is refused.
    public func migrate() async throws {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(7261829301)", logger: self.logger)
            try await connection.query("CREATE SCHEMA IF NOT EXISTS jobctl", logger: self.logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS jobctl.schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)", logger: self.logger
            )
            var applied: Set<String> = []
            for try await name in try await connection.query("SELECT name FROM jobctl.schema_migrations", logger: self.logger).decode(String.self) {
                applied.insert(name)
            }
            if let unknown = applied.subtracting(Migrations.postgres.map(\.name)).sorted().first {
                throw JobStoreError(.unavailable, "the job database \(self.location) has migration \(unknown), from a newer jobctl; upgrade jobctl")
            }
            for migration in Migrations.postgres where !applied.contains(migration.name) {
                // One statement per query (the extended protocol takes one); the files hold no
                // functions or quoted semicolons.
                for statement in Self.statements(in: migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
                }
                try await connection.query(
                    "INSERT INTO jobctl.schema_migrations (name, applied_at) VALUES (\(migration.name), \(Date().milliseconds))", logger: self.logger
                )
            }
        }
    }

    /// The statements of a migration file: `--` comments dropped, split at `;` ending a line.
    static func statements(in sql: String) -> [String] {
        let lines = sql.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard let comment = line.range(of: "--") else { return line }
            return line[..<comment.lowerBound]
        }
        return lines.joined(separator: "\n")
            .components(separatedBy: ";\n")
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: ";")) }
            .filter { !$0.isEmpty }
    }

    // MARK: Time

    /// The injected clock's milliseconds, or `nil`: then SQL takes the database's clock.
    private var now: Int64? { clock.map { $0().milliseconds } }

    /// `now` as SQL: the bound value, or the database's clock.
    private static let databaseNow = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

    private func currentTime(_ connection: PostgresConnection) async throws -> Int64 {
        if let now { return now }
        let rows = try await connection.query("SELECT \(unescaped: Self.databaseNow)", logger: logger)
        for try await value in rows.decode(Int64.self) { return value }
        throw JobStoreError(.unavailable, "the job database did not tell the time")
    }

    // MARK: Submitting and reading

    public func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            if let key = request.idempotencyKey {
                // Serialize submits with the same key (an advisory lock on its hash).
                try await connection.query("SELECT pg_advisory_xact_lock(hashtext(\(key)))", logger: self.logger)
                if let existing = try await self.firstJob("SELECT \(unescaped: Column.list) FROM jobctl.jobs WHERE idempotency_key = \(key)", connection) {
                    return (existing, false)
                }
            }
            let id = JobID.make(at: Date(milliseconds: now))
            try await connection.query(
                """
                INSERT INTO jobctl.jobs (id, kind, status, input, output, preset, preset_settings, format, range_start, range_duration,
                    priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key, created_at, updated_at)
                VALUES (\(id.rawValue), \(request.kind.rawValue), 'unknown', \(request.input), \(request.output), \(request.preset),
                    \(try encodeJSON(request.presetSettings)), \(request.format), \(request.range?.start), \(request.range?.duration),
                    \(request.priority), \(request.maxAttempts), \(request.maxAttempts), \(now), \(request.webhook),
                    \(try encodeJSON(request.metadata)), \(request.idempotencyKey), \(now), \(now))
                """,
                logger: self.logger
            )
            try await self.notify(connection, "job")
            return (try await self.job(id, connection), true)
        }
    }

    public func job(_ id: JobID) async throws -> Job? {
        try await withConnection { connection in
            try await self.firstJob("SELECT \(unescaped: Column.list) FROM jobctl.jobs WHERE id = \(id.rawValue)", connection)
        }
    }

    public func jobs(status: JobStatus?, limit: Int) async throws -> [Job] {
        try await withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT \(unescaped: Column.list) FROM jobctl.jobs WHERE \(status?.rawValue)::text IS NULL OR status = \(status?.rawValue)
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """,
                logger: self.logger
            )
            var jobs: [Job] = []
            for try await row in rows { jobs.append(try Self.job(row.makeRandomAccess(), tracks: [])) }
            return try await self.attachTracks(jobs, connection)
        }
    }

    public func statusCounts() async throws -> [JobStatus: Int] {
        try await withConnection { connection in
            var counts: [JobStatus: Int] = [:]
            for try await (status, count) in try await connection.query(
                "SELECT status, COUNT(*) FROM jobctl.jobs GROUP BY status", logger: self.logger
            ).decode((String, Int).self) {
                if let status = JobStatus(rawValue: status) { counts[status] = count }
            }
            return counts
        }
    }

    // MARK: Claiming and running

    public func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        let injected = now
        // A read first: idle workers polling never open a write transaction.
        let (expired, queued) = try await withConnection { connection in
            let rows = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM jobctl.jobs WHERE status = 'reading' AND lease_expires_at <= COALESCE(\(injected), \(unescaped: Self.databaseNow))),
                    EXISTS (SELECT 1 FROM jobctl.jobs WHERE status = 'unknown' AND run_at <= COALESCE(\(injected), \(unescaped: Self.databaseNow)))
                """,
                logger: self.logger
            )
            for try await value in rows.decode((Bool, Bool).self) { return value }
            return (false, false)
        }
        let claimed: [ClaimedJob]
        if expired {
            claimed = try await transaction { connection in
                try await self.settleExpiredLeases(connection)
                // Jobs of dead workers compete with queued ones by priority, then age (the
                // protocol's order; the OR forgoes the partial index, in this rare case only).
                return try await self.claim(.queuedOrExpired, as: worker, limit: limit, lease: lease, connection)
            }
        } else if queued {
            // The usual case: one statement, atomic on its own.
            claimed = try await withConnection { connection in try await self.claim(.queued, as: worker, limit: limit, lease: lease, connection) }
        } else {
            return []
        }
        return claimed.sorted(by: ClaimedJob.claimOrder)
    }

    /// Where claims come from: queued jobs that are due, and running jobs whose lease expired.
    private enum ClaimSource: String {
        case queued = "j.status = 'unknown' AND j.run_at <= t.now"
        case queuedOrExpired = "((j.status = 'unknown' AND j.run_at <= t.now) OR (j.status = 'reading' AND j.lease_expires_at <= t.now))"
    }

    /// Takes up to `limit` jobs from `source` in index order (SKIP LOCKED: concurrent claimers
    /// take different rows), starts their attempt and clears their previous attempt's tracks.
    private func claim(
        _ source: ClaimSource, as worker: WorkerIdentity, limit: Int, lease: Duration, _ connection: PostgresConnection
    ) async throws -> [ClaimedJob] {
        let rows = try await connection.query(
            """
            WITH \(unescaped: clockCTE), claimed AS (
                UPDATE jobctl.jobs SET status = 'reading', attempt = attempt + 1, worker = \(worker.name),
                    lease_token = md5(random()::text || clock_timestamp()::text || id), lease_expires_at = t.now + \(lease.milliseconds),
                    cancel_requested = FALSE, progress = 0, started_at = t.now, finished_at = NULL, updated_at = t.now
                FROM t
                WHERE id IN (
                    SELECT j.id FROM jobctl.jobs j, t WHERE \(unescaped: source.rawValue)
                    ORDER BY j.priority DESC, j.created_at, j.id LIMIT \(limit) FOR UPDATE OF j SKIP LOCKED
                )
                RETURNING \(unescaped: Column.list)
            ),
            cleared AS (DELETE FROM jobctl.job_tracks WHERE job_id IN (SELECT id FROM claimed))
            SELECT * FROM claimed
            """,
            logger: logger
        )
        var claimed: [ClaimedJob] = []
        for try await row in rows {
            let access = row.makeRandomAccess()
            let job = try Self.job(access, tracks: [])
            let token = try access[Column.leaseToken].decode(String.self)
            claimed.append(ClaimedJob(job: job, lease: Lease(jobID: job.id, token: token, attempt: job.attempt, worker: worker.name)))
        }
        return claimed
    }

    /// Jobs whose worker vanished: cancelled if that was asked, failed when out of attempts
    /// (the others are claimed again); each with its webhook event.
    private func settleExpiredLeases(_ connection: PostgresConnection) async throws {
        let now = try await currentTime(connection)
        var ended: [String] = []
        for try await id in try await connection.query(
            """
            UPDATE jobctl.jobs SET status = 'cancelled', lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE, finished_at = \(now),
                updated_at = \(now)
            WHERE status = 'reading' AND lease_expires_at <= \(now) AND cancel_requested RETURNING id
            """, logger: logger
        ).decode(String.self) { ended.append(id) }
        for try await id in try await connection.query(
            """
            UPDATE jobctl.jobs SET status = 'failed', lease_token = NULL, lease_expires_at = NULL, finished_at = \(now), updated_at = \(now),
                error_code = 'lease_lost', error_retryable = TRUE,
                error_message = 'its worker ' || coalesce(worker, '?') || ' stopped renewing the lease on attempt ' || attempt || ' of ' || max_attempts
            WHERE status = 'reading' AND lease_expires_at <= \(now) AND attempt >= max_attempts RETURNING id
            """, logger: logger
        ).decode(String.self) { ended.append(id) }
        for id in ended { try await enqueueEvent(for: JobID(id), connection, now: now) }
    }

    /// One statement (atomic on its own): the fenced lease extension and the tracks.
    public func heartbeat(_ lease: Lease, progress: Double, tracks: [JobTrack], extendBy: Duration) async throws -> LeaseState {
        let tracksJSON = try encodeJSON(tracks)
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
                """, logger: self.logger
            ).decode(Bool.self) { return .held(cancelRequested: value) }
            return .lost
        }
    }

    public func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID> {
        guard !leases.isEmpty else { return [] }
        return try await withConnection { connection in
            var ids: Set<JobID> = []
            for try await id in try await connection.query(
                "SELECT id FROM jobctl.jobs WHERE id = ANY(\(leases.map(\.jobID.rawValue))) AND cancel_requested", logger: self.logger
            ).decode(String.self) { ids.insert(JobID(id)) }
            return ids
        }
    }

    public func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool {
        let resultJSON = try encodeJSON(result)
        let tracksJSON = try encodeJSON(tracks)
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
                    error_code = \(error.code), error_message = \(error.message), error_retryable = \(error.retryable),
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
                    cancel_requested = FALSE, updated_at = t.now
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
                    lease_token = NULL, lease_expires_at = NULL, cancel_requested = FALSE, updated_at = t.now
                FROM t WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                RETURNING \(unescaped: Self.finishedColumns), NULL::jsonb AS tracks
            ), \(unescaped: Self.afterFinish)
            """
        }
    }

    /// What the `done` CTE of an attempt's end returns, besides its `tracks`.
    private static let finishedColumns = "id, status, webhook IS NOT NULL AS has_webhook, t.now"

    /// After `done` (the fenced UPDATE): its tracks recorded, workers woken if the job is queued
    /// again; the statement returns the new status, whether there is a webhook, and the time.
    private static let afterFinish = """
        \(replaceTracksCTEs),
        woken AS (SELECT pg_notify('\(channel)', 'job') FROM done WHERE status = 'unknown')
        SELECT status, has_webhook, now, (SELECT count(*) FROM woken) FROM done
        """

    /// Replaces the tracks of the job in `done` by `done.tracks` (a JSON array of `JobTrack`;
    /// `NULL` leaves them as they are), in the same statement.
    private static let replaceTracksCTEs = """
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
    private var clockCTE: String {
        "t AS (SELECT \(now.map(String.init) ?? Self.databaseNow)::bigint AS now)"
    }

    /// Ends the current attempt with `statement` (the fenced UPDATE with `afterFinish`). A job
    /// that ended with a webhook gets its event in the same transaction; one without a webhook
    /// (or queued again) needs nothing else.
    private func finish(_ lease: Lease, statement: @escaping @Sendable () throws -> PostgresQuery) async throws -> Bool {
        try await transaction { connection in
            var outcome: (status: String, hasWebhook: Bool, now: Int64)?
            for try await (status, hasWebhook, now, _) in try await connection.query(statement(), logger: self.logger)
                .decode((String, Bool, Int64, Int64).self)
            {
                outcome = (status, hasWebhook, now)
            }
            guard let outcome else { return false }
            if outcome.hasWebhook, JobStatus(rawValue: outcome.status)?.isTerminal == true {
                try await self.enqueueEvent(for: lease.jobID, connection, now: outcome.now)
            }
            return true
        }
    }

    // MARK: Cancel and retry

    public func cancel(_ id: JobID) async throws -> CancelOutcome {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            let status = try await self.status(of: id, connection, lock: true)
            switch status {
            case .unknown:
                try await connection.query(
                    "UPDATE jobctl.jobs SET status = 'cancelled', finished_at = \(now), updated_at = \(now) WHERE id = \(id.rawValue)", logger: self.logger
                )
                try await self.enqueueEvent(for: id, connection, now: now)
                return .cancelled(try await self.job(id, connection))
            case .reading:
                try await connection.query(
                    "UPDATE jobctl.jobs SET cancel_requested = TRUE, updated_at = \(now) WHERE id = \(id.rawValue)", logger: self.logger
                )
                try await self.notify(connection, "cancel")
                return .requested(try await self.job(id, connection))
            case .completed, .failed, .cancelled:
                throw JobStoreError(.conflict(status), "job \(id) has already ended (\(status)); nothing to cancel")
            }
        }
    }

    public func retry(_ id: JobID) async throws -> Job {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            let status = try await self.status(of: id, connection, lock: true)
            guard JobStateMachine.next(status, on: .retry, attempt: 0, maxAttempts: 1) == .unknown else {
                throw JobStoreError(.conflict(status), "job \(id) is \(status); only failed or cancelled jobs can be retried")
            }
            try await connection.query(
                """
                UPDATE jobctl.jobs SET status = 'unknown', run_at = \(now), max_attempts = attempt + attempt_budget, progress = 0, result = NULL,
                    error_code = NULL, error_message = NULL, error_retryable = NULL, cancel_requested = FALSE, finished_at = NULL, updated_at = \(now)
                WHERE id = \(id.rawValue)
                """, logger: self.logger
            )
            try await self.notify(connection, "job")
            return try await self.job(id, connection)
        }
    }

    // MARK: Workers

    public func workerStarted(_ worker: WorkerIdentity) async throws {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            try await connection.query(
                """
                INSERT INTO jobctl.workers (name, host, pid, version, started_at, heartbeat_at)
                VALUES (\(worker.name), \(worker.host), \(Int(worker.pid)), \(worker.version), \(now), \(now))
                ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
                    started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
                """, logger: self.logger
            )
        }
    }

    public func workerHeartbeat(_ worker: WorkerIdentity) async throws {
        _ = try await withConnection { connection in
            try await connection.query(
                "UPDATE jobctl.workers SET heartbeat_at = COALESCE(\(self.now), \(unescaped: Self.databaseNow)) WHERE name = \(worker.name)", logger: self.logger
            )
        }
    }

    public func workerStopped(_ worker: WorkerIdentity) async throws {
        _ = try await withConnection { connection in
            try await connection.query(
                """
                UPDATE jobctl.workers SET stopped_at = COALESCE(\(self.now), \(unescaped: Self.databaseNow)),
                    heartbeat_at = COALESCE(\(self.now), \(unescaped: Self.databaseNow)) WHERE name = \(worker.name)
                """, logger: self.logger
            )
        }
    }

    public func workers() async throws -> [WorkerInfo] {
        try await withConnection { connection in
            var jobs: [String: [JobID]] = [:]
            for try await (worker, id) in try await connection.query(
                "SELECT worker, id FROM jobctl.jobs WHERE status = 'reading' ORDER BY started_at", logger: self.logger
            ).decode((String?, String).self) { jobs[worker ?? "", default: []].append(JobID(id)) }
            var workers: [WorkerInfo] = []
            for try await (name, host, pid, version, started, heartbeat, stopped) in try await connection.query(
                "SELECT name, host, pid, version, started_at, heartbeat_at, stopped_at FROM jobctl.workers ORDER BY heartbeat_at DESC, name",
                logger: self.logger
            ).decode((String, String, Int, String, Int64, Int64, Int64?).self) {
                workers.append(WorkerInfo(
                    name: name, host: host, pid: Int32(pid), version: version, startedAt: Date(milliseconds: started),
                    heartbeatAt: Date(milliseconds: heartbeat), stoppedAt: stopped.map(Date.init(milliseconds:)), runningJobs: jobs[name] ?? []
                ))
            }
            return workers
        }
    }

    // MARK: Webhook outbox

    /// Writes the event for a job that just reached a terminal status, if it has a webhook.
    private func enqueueEvent(for id: JobID, _ connection: PostgresConnection, now: Int64) async throws {
        let job = try await job(id, connection)
        guard job.status.isTerminal, let url = job.webhook else { return }
        let type = "job.\(job.status.rawValue)"
        let body = try Job.makeJSONEncoder(pretty: false).encode(WebhookPayload(type: type, timestamp: Date(milliseconds: now), data: job))
        let deliveryID = "msg_" + JobID.make().rawValue.replacingOccurrences(of: "-", with: "")
        try await connection.query(
            """
            WITH added AS (
                INSERT INTO jobctl.webhook_deliveries (id, job_id, type, url, payload, status, next_attempt_at, created_at, updated_at)
                VALUES (\(deliveryID), \(id.rawValue), \(type), \(url), \(String(decoding: body, as: UTF8.self)), 'pending', \(now), \(now), \(now))
                RETURNING id
            )
            SELECT pg_notify('\(unescaped: Self.channel)', 'webhook') FROM added
            """, logger: logger
        )
    }

    public func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let injected = now
        let due = try await withConnection { connection in
            for try await value in try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM jobctl.webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= COALESCE(\(injected), \(unescaped: Self.databaseNow)))
                    OR EXISTS (SELECT 1 FROM jobctl.webhook_deliveries WHERE status = 'delivering' AND lease_expires_at <= COALESCE(\(injected), \(unescaped: Self.databaseNow)))
                """, logger: self.logger
            ).decode(Bool.self) { return value }
            return false
        }
        guard due else { return [] }
        return try await transaction { connection in
            let now = try await self.currentTime(connection)
            let rows = try await connection.query(
                """
                UPDATE jobctl.webhook_deliveries SET status = 'delivering', lease_token = md5(random()::text || clock_timestamp()::text || id),
                    lease_expires_at = \(now + lease.milliseconds), dispatcher = \(dispatcher), updated_at = \(now)
                WHERE id IN (
                    SELECT id FROM jobctl.webhook_deliveries
                    WHERE (status = 'pending' AND next_attempt_at <= \(now)) OR (status = 'delivering' AND lease_expires_at <= \(now))
                    ORDER BY coalesce(next_attempt_at, created_at), created_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED
                )
                RETURNING \(unescaped: DeliveryColumn.list), payload, lease_token
                """, logger: self.logger
            )
            var claimed: [ClaimedDelivery] = []
            for try await row in rows {
                let access = row.makeRandomAccess()
                claimed.append(ClaimedDelivery(
                    delivery: try Self.delivery(access, log: []), payload: Data(try access[11].decode(String.self).utf8),
                    leaseToken: try access[12].decode(String.self), dispatcher: dispatcher
                ))
            }
            return claimed.sorted(by: ClaimedDelivery.dueOrder)
        }
    }

    public func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            let (attempt, status, next, deliveredAt): (DeliveryAttempt, DeliveryStatus, Int64?, Int64?) = switch outcome {
            case .delivered(let attempt): (attempt, .delivered, nil, now)
            case .retry(let attempt, let delay): (attempt, .pending, now + delay.milliseconds, nil)
            case .failed(let attempt): (attempt, .failed, nil, nil)
            }
            var number: Int?
            for try await value in try await connection.query(
                """
                UPDATE jobctl.webhook_deliveries SET attempts = attempts + 1, status = \(status.rawValue), next_attempt_at = \(next),
                    delivered_at = \(deliveredAt), last_status_code = \(attempt.statusCode), last_error = \(attempt.error),
                    lease_token = NULL, lease_expires_at = NULL, updated_at = \(now)
                WHERE id = \(claimed.delivery.id) AND lease_token = \(claimed.leaseToken) AND status = 'delivering'
                RETURNING attempts
                """, logger: self.logger
            ).decode(Int.self) { number = value }
            guard let number else { return false }
            try await connection.query(
                """
                INSERT INTO jobctl.webhook_attempts (delivery_id, attempt, at, status_code, latency_ms, error, dispatcher)
                VALUES (\(claimed.delivery.id), \(number), \(attempt.at.milliseconds), \(attempt.statusCode), \(attempt.latency), \(attempt.error), \(attempt.dispatcher))
                """, logger: self.logger
            )
            if status == .pending { try await self.notify(connection, "webhook") }
            return true
        }
    }

    public func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery] {
        try await withConnection { connection in
            var deliveries: [WebhookDelivery] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: DeliveryColumn.list) FROM jobctl.webhook_deliveries WHERE \(job?.rawValue)::text IS NULL OR job_id = \(job?.rawValue)
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """, logger: self.logger
            ) { deliveries.append(try Self.delivery(row.makeRandomAccess(), log: [])) }
            for index in deliveries.indices { deliveries[index].log = try await self.attempts(of: deliveries[index].id, connection) }
            return deliveries
        }
    }

    public func redeliver(_ id: String) async throws -> WebhookDelivery {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            var status: String?
            for try await value in try await connection.query(
                "SELECT status FROM jobctl.webhook_deliveries WHERE id = \(id) FOR UPDATE", logger: self.logger
            ).decode(String.self) { status = value }
            guard let status else { throw JobStoreError(.notFound, "no webhook delivery \(id)") }
            guard status != DeliveryStatus.delivering.rawValue else {
                throw JobStoreError(.conflict(.reading), "delivery \(id) is being sent right now")
            }
            try await connection.query(
                "UPDATE jobctl.webhook_deliveries SET status = 'pending', next_attempt_at = \(now), delivered_at = NULL, updated_at = \(now) WHERE id = \(id)",
                logger: self.logger
            )
            try await self.notify(connection, "webhook")
            for try await row in try await connection.query(
                "SELECT \(unescaped: DeliveryColumn.list) FROM jobctl.webhook_deliveries WHERE id = \(id)", logger: self.logger
            ) {
                return try Self.delivery(row.makeRandomAccess(), log: try await self.attempts(of: id, connection))
            }
            throw JobStoreError(.notFound, "no webhook delivery \(id)")
        }
    }

    private func attempts(of id: String, _ connection: PostgresConnection) async throws -> [DeliveryAttempt] {
        var attempts: [DeliveryAttempt] = []
        for try await (attempt, at, status, latency, error, dispatcher) in try await connection.query(
            "SELECT attempt, at, status_code, latency_ms, error, dispatcher FROM jobctl.webhook_attempts WHERE delivery_id = \(id) ORDER BY attempt",
            logger: logger
        ).decode((Int, Int64, Int?, Int, String?, String).self) {
            attempts.append(DeliveryAttempt(attempt: attempt, at: Date(milliseconds: at), statusCode: status, latency: latency, error: error, dispatcher: dispatcher))
        }
        return attempts
    }

    // MARK: Notifications

    /// Yields on every `pg_notify('jobctl', …)` (a submit, a cancel, a retry, an event), and once
    /// on each (re)connection, since notifications sent while disconnected are lost. One
    /// listening connection per store, however many subscribers (the worker's claim loop and its
    /// webhook dispatcher share it); it closes with the last subscriber. A lost connection is
    /// reopened with backoff; workers keep polling meanwhile.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        listening.withLock { state in
            state.subscribers[id] = continuation
            if state.listener == nil {
                state.listener = Task { [self] in await listen() }
            } else if state.connected {
                continuation.yield()
            }
        }
        continuation.onTermination = { [weak self] _ in
            let listener = self?.listening.withLock { state -> Task<Void, Never>? in
                state.subscribers[id] = nil
                guard state.subscribers.isEmpty, let listener = state.listener else { return nil }
                state.listener = nil
                state.connected = false
                return listener
            }
            listener?.cancel()
        }
        return stream
    }

    private struct Listening {
        var subscribers: [UUID: AsyncStream<Void>.Continuation] = [:]
        var listener: Task<Void, Never>?
        var connected = false
    }

    private func broadcast(connected: Bool) {
        listening.withLock { state in
            state.connected = connected
            if connected { for subscriber in state.subscribers.values { subscriber.yield() } }
        }
    }

    private func listen() async {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        backoff = .milliseconds(100)
                        self.broadcast(connected: true)
                        for try await _ in notifications { self.broadcast(connected: true) }
                    }
                }
            } catch {
                broadcast(connected: false)
                if Task.isCancelled { break }
                logger.warning("Listening for job notifications failed; polling until reconnected", metadata: ["error": "\(Self.describe(error))"])
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(5))
        }
    }

    private func notify(_ connection: PostgresConnection, _ payload: String) async throws {
        try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
    }

    // MARK: Rows

    private enum Column {
        static let list = [
            "id", "kind", "status", "input", "output", "preset", "preset_settings", "format", "range_start", "range_duration",
            "priority", "attempt", "max_attempts", "progress", "result", "error_code", "error_message", "error_retryable", "webhook",
            "metadata", "idempotency_key", "worker", "cancel_requested", "run_at", "created_at", "started_at", "finished_at", "lease_token",
        ].joined(separator: ", ")
        static let leaseToken = 27
    }

    private enum DeliveryColumn {
        static let list = "id, job_id, type, url, status, attempts, next_attempt_at, created_at, delivered_at, last_status_code, last_error"
    }

    private func status(of id: JobID, _ connection: PostgresConnection, lock: Bool = false) async throws -> JobStatus {
        let rows = try await connection.query(
            "SELECT status FROM jobctl.jobs WHERE id = \(id.rawValue) \(unescaped: lock ? "FOR UPDATE" : "")", logger: logger
        )
        for try await raw in rows.decode(String.self) {
            return try StoredValue.decode(raw, column: "status", row: "job \(id)")
        }
        throw JobStoreError(.notFound, "no job \(id)")
    }

    private func job(_ id: JobID, _ connection: PostgresConnection) async throws -> Job {
        guard let job = try await firstJob("SELECT \(unescaped: Column.list) FROM jobctl.jobs WHERE id = \(id.rawValue)", connection) else {
            throw JobStoreError(.notFound, "no job \(id)")
        }
        return job
    }

    /// The first job `query` returns (it selects `Column.list`), with its tracks.
    private func firstJob(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> Job? {
        for try await row in try await connection.query(query, logger: logger) {
            return try await attachTracks([try Self.job(row.makeRandomAccess(), tracks: [])], connection).first
        }
        return nil
    }

    private func attachTracks(_ jobs: [Job], _ connection: PostgresConnection) async throws -> [Job] {
        guard !jobs.isEmpty else { return jobs }
        var tracks: [JobID: [JobTrack]] = [:]
        for try await (id, index, source, media, status, codec, read, written) in try await connection.query(
            """
            SELECT job_id, idx, source_index, media_type, status, codec, read, written FROM jobctl.job_tracks
            WHERE job_id = ANY(\(jobs.map(\.id.rawValue))) ORDER BY job_id, idx
            """, logger: logger
        ).decode((String, Int, Int, String, String, String?, Int64, Int64).self) {
            tracks[JobID(id), default: []].append(JobTrack(
                index: index, sourceIndex: source, mediaType: media, status: try StoredValue.decode(status, column: "track status", row: "job \(id)"),
                codec: codec, read: read, written: written
            ))
        }
        return jobs.map { job in
            var job = job
            job.tracks = tracks[job.id] ?? []
            return job
        }
    }

    private static func job(_ row: PostgresRandomAccessRow, tracks: [JobTrack]) throws -> Job {
        let errorCode = try row[15].decode(String?.self)
        let rangeStart = try row[8].decode(Double?.self)
        let rangeDuration = try row[9].decode(Double?.self)
        let errorMessage = try row[16].decode(String?.self)
        let errorRetryable = try row[17].decode(Bool?.self)
        let id = try row[0].decode(String.self)
        return Job(
            id: JobID(id),
            kind: try StoredValue.decode(try row[1].decode(String.self), column: "kind", row: "job \(id)"),
            status: try StoredValue.decode(try row[2].decode(String.self), column: "status", row: "job \(id)"),
            input: try row[3].decode(String.self),
            output: try row[4].decode(String.self),
            preset: try row[5].decode(String.self),
            presetSettings: try decodeJSON(JSONValue.self, row[6].decode(String.self)) ?? .null,
            format: try row[7].decode(String?.self),
            range: rangeStart.map { Job.Range(start: $0, duration: rangeDuration) },
            priority: try row[10].decode(Int.self),
            attempt: try row[11].decode(Int.self),
            maxAttempts: try row[12].decode(Int.self),
            progress: try row[13].decode(Double.self),
            tracks: tracks,
            result: try decodeJSON(JSONValue.self, row[14].decode(String?.self)),
            error: errorCode.map { JobError(code: $0, message: errorMessage ?? "", retryable: errorRetryable) },
            webhook: try row[18].decode(String?.self),
            metadata: try decodeJSON([String: String].self, row[19].decode(String.self)) ?? [:],
            idempotencyKey: try row[20].decode(String?.self),
            worker: try row[21].decode(String?.self),
            cancelRequested: try row[22].decode(Bool.self),
            runAt: Date(milliseconds: try row[23].decode(Int64.self)),
            createdAt: Date(milliseconds: try row[24].decode(Int64.self)),
            startedAt: try row[25].decode(Int64?.self).map(Date.init(milliseconds:)),
            finishedAt: try row[26].decode(Int64?.self).map(Date.init(milliseconds:))
        )
    }

    private static func delivery(_ row: PostgresRandomAccessRow, log: [DeliveryAttempt]) throws -> WebhookDelivery {
        let id = try row[0].decode(String.self)
        return WebhookDelivery(
            id: id, jobID: JobID(try row[1].decode(String.self)), type: try row[2].decode(String.self),
            url: try row[3].decode(String.self), status: try StoredValue.decode(try row[4].decode(String.self), column: "status", row: "webhook delivery \(id)"),
            attempts: try row[5].decode(Int.self), nextAttemptAt: try row[6].decode(Int64?.self).map(Date.init(milliseconds:)),
            createdAt: Date(milliseconds: try row[7].decode(Int64.self)), deliveredAt: try row[8].decode(Int64?.self).map(Date.init(milliseconds:)),
            lastStatusCode: try row[9].decode(Int?.self), lastError: try row[10].decode(String?.self), log: log
        )
    }

    // MARK: Plumbing

    private func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await withinConnectionWait { connected in
                try await self.client.withTransaction(logger: self.logger) { connection in
                    connected()
                    return try await body(connection)
                }
            }
        } catch let error as JobStoreError {
            throw error
        } catch let error as PostgresTransactionError {
            if let closure = error.closureError as? JobStoreError { throw closure }
            throw JobStoreError(.unavailable, "the job database \(location) failed: \(Self.describe(error.closureError ?? error.commitError ?? error.beginError ?? error))")
        } catch {
            throw JobStoreError(.unavailable, "the job database \(location) failed: \(Self.describe(error))")
        }
    }

    private func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await withinConnectionWait { connected in
                try await self.client.withConnection { connection in
                    connected()
                    return try await body(connection)
                }
            }
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw JobStoreError(.unavailable, "the job database \(location) failed: \(Self.describe(error))")
        }
    }

    /// Runs `operation`, which leases a connection and calls `connected` once it has one. The
    /// pool retries failed connections forever; an operation that has no connection after
    /// `connectionWait` is cancelled and fails with the pool's last reason, so a command says
    /// what is wrong instead of hanging and a worker logs it and retries.
    private func withinConnectionWait<T: Sendable>(
        _ operation: @escaping @Sendable (_ connected: @escaping @Sendable () -> Void) async throws -> T
    ) async throws -> T {
        let leased = LeaseFlag()
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation { leased.set() } }
            group.addTask { [connectionWait, problems, location] in
                // Until a connection is leased: fail at once on a final reason, else at the deadline.
                let started = ContinuousClock.now
                let deadline = started + connectionWait
                while !leased.isSet {
                    let failure = problems.lastFailure
                    let hopeless = failure.map { $0.final && $0.at >= started } ?? false
                    if hopeless || ContinuousClock.now >= deadline {
                        let reason = failure?.reason ?? "no connection became free within \(connectionWait)"
                        throw JobStoreError(.unavailable, "the job database \(location) cannot be reached: \(reason)")
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let value = result { return value }
            }
            throw CancellationError()
        }
    }

    private final class LeaseFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }

    /// PSQLError's description is deliberately generic (no secrets); take the server's message.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] { return message }
            return "\(error.code)"
        }
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
    return try JSONDecoder().decode(type, from: Data(text.utf8))
}
