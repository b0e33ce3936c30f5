import Foundation
import JobctlCore
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
    let problems: ConnectionProblems
    /// How long an operation waits for a connection before it fails with the reason.
    let connectionWait: Duration
    let listening = Mutex(Listening())
    /// Concurrent completions, committed together (`CompletionBatch`).
    let completions: CompletionBatch
    /// Operations waiting for a connection, failed past `connectionWait`.
    let waits: ConnectionWaits
    /// When claims last looked for expired leases (they look at most every `expiryCheckInterval`).
    let expiryChecked = Mutex<ContinuousClock.Instant?>(nil)
    let clock: (@Sendable () -> Date)?
    let logger: Logger
    /// For messages: the URL without its password.
    public let location: String

    /// - Parameter clock: `nil` (production): the database's clock; tests inject their own.
    /// - Parameter connectionWait: how long an operation waits for a connection before it fails
    ///   with the reason (the server down, refused, a certificate not trusted…).
    /// - Parameter knownDownGrace: with a value, how long an operation waits instead while the
    ///   database is known down (`jobctl serve`: a 503 at once rather than every request held
    ///   for `connectionWait`); `nil` (commands, workers): the whole `connectionWait`, which
    ///   rides out a restart.
    public init(
        url: String,
        clock: (@Sendable () -> Date)? = nil,
        connectionWait: Duration = .seconds(15),
        knownDownGrace: Duration? = nil,
        logger: Logger = Logger(label: "jobctl.postgres")
    ) throws {
        let configuration = try PostgresJobStore.configuration(from: url)
        let problems = ConnectionProblems()
        client = PostgresClient(
            configuration: configuration,
            backgroundLogger: Self.backgroundLogger(logger, problems: problems)
        )
        self.problems = problems
        self.connectionWait = connectionWait
        self.clock = clock
        self.logger = logger
        let location = MediaLocation.withoutCredentials(url)
        self.location = location
        completions = CompletionBatch()
        waits = ConnectionWaits { wait in
            Self.connectionWaitFailure(
                wait,
                problems: problems,
                connectionWait: connectionWait,
                knownDownGrace: knownDownGrace,
                location: location
            )
        }
    }

    /// Runs the client's connection pool until `body` returns; migrates first.
    public static func withStore<T: Sendable>(
        url: String,
        clock: (@Sendable () -> Date)? = nil,
        logger: Logger = Logger(label: "jobctl.postgres"),
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

    /// Runs the connection pool (as a service of the worker's group).
    public func run() async { await client.run() }

    // MARK: Time

    /// The injected clock's milliseconds, or `nil`: then SQL takes the database's clock.
    var now: Int64? { clock.map { $0().milliseconds } }

    /// The database's clock as SQL: the time the statement began. Stable within a statement
    /// (unlike `clock_timestamp()`, which is volatile), so a comparison with it is an index
    /// condition and not a filter over every row of the index (1.5 ms per claim at 10k jobs).
    static let databaseNow = "(extract(epoch from statement_timestamp()) * 1000)::bigint"

    func currentTime(_ connection: PostgresConnection) async throws -> Int64 {
        if let now { return now }
        let rows = try await connection.query("SELECT \(unescaped: Self.databaseNow)", logger: logger)
        for try await value in rows.decode(Int64.self) { return value }
        throw JobStoreError(.databaseUnavailable, "the job database did not tell the time")
    }

    // MARK: Plumbing

    func transaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T
    {
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
            let underlying = error.closureError ?? error.commitError ?? error.beginError ?? error
            throw JobStoreError(
                .databaseUnavailable,
                "the job database \(location) failed: \(Self.describe(underlying))",
                cause: underlying
            )
        } catch {
            throw JobStoreError(
                .databaseUnavailable,
                "the job database \(location) failed: \(Self.describe(error))",
                cause: error
            )
        }
    }

    func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
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
            throw JobStoreError(
                .databaseUnavailable,
                "the job database \(location) failed: \(Self.describe(error))",
                cause: error
            )
        }
    }

    /// Runs `operation`, which leases a connection and calls `connected` once it has one. The
    /// pool retries failed connections forever; an operation that has no connection after
    /// `connectionWait` is cancelled and fails with the pool's last reason, so a command says
    /// what is wrong instead of hanging and a worker logs it and retries (`ConnectionWaits`).
    func withinConnectionWait<T: Sendable>(
        _ operation: @escaping @Sendable (_ connected: @escaping @Sendable () -> Void) async throws -> T
    ) async throws -> T {
        let (waits, problems) = (self.waits, self.problems)
        let wait = waits.begin()
        defer { waits.end(wait) }
        // A task of its own, so that the watcher can cancel it while it waits for the pool.
        let task = Task {
            try await operation {
                if wait.leased() { waits.end(wait) }
                // A connection came: the database is reachable again, whatever the pool logged
                // (its "Connection established" is a debug event, which may be filtered out).
                problems.connected()
            }
        }
        wait.attach { task.cancel() }
        do {
            return try await withTaskCancellationHandler {
                try await task.value
            } onCancel: {
                task.cancel()
            }
        } catch {
            if let failure = wait.failure { throw failure }
            throw error
        }
    }

    /// Whether an operation waiting for a connection since `started` should fail, and why: at
    /// once on a final reason (the server refused us); after `knownDownGrace`, when given, while
    /// the database is known down (the last attempt to connect failed and none has succeeded
    /// since); else at the deadline.
    static func connectionWaitFailure(
        _ wait: ConnectionWaits.Wait,
        problems: ConnectionProblems,
        connectionWait: Duration,
        knownDownGrace: Duration? = nil,
        location: String
    ) -> JobStoreError? {
        let failure = problems.lastFailure
        let hopeless = failure.map { $0.final && $0.at >= wait.started } ?? false
        let down =
            failure != nil
            && knownDownGrace.map { ContinuousClock.now >= wait.started + min(connectionWait, $0) } == true
        guard hopeless || down || ContinuousClock.now >= wait.started + connectionWait else { return nil }
        let reason = failure?.reason ?? "no connection became free within \(connectionWait)"
        return JobStoreError(.databaseUnavailable, "the job database \(location) cannot be reached: \(reason)")
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
