import ArgumentParser
import CommandLineSupport
import Foundation
import JobctlCore
import Logging
import PostgresNIO
import Queue
import QueuePostgres
import QueueSQLite
import SafeHTTP
import Webhooks

/// `jobctl-bench`: the queue's and the webhooks' benchmarks, a binary of their own so the
/// shipped `jobctl` does not carry them. `make bench` builds both and runs it.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobctl-bench",
        abstract: "Benchmarks of the queue and the webhooks (docs/benchmarks.md), with real `jobctl worker` processes.",
        discussion: """
            The workers are the `jobctl` binary beside this one (JOBCTL_BINARY overrides it): \
            `swift build -c release` builds both.
            """,
        subcommands: [QueueBenchCommand.self, WebhookBenchCommand.self]
    )

    /// The `jobctl` that runs as the benchmark's workers.
    static var jobctl: URL {
        if let path = ProcessInfo.processInfo.environment["JOBCTL_BINARY"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.deletingLastPathComponent()
            .appendingPathComponent("jobctl")
    }
}

/// Queue throughput and pickup latency on SQLite or PostgreSQL, with real worker processes of
/// `jobctl` (the binary beside this one).
struct QueueBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract:
            "Measure queue throughput (no-op jobs per second, N worker processes) and pickup latency (submit → claimed).",
        discussion: """
            Throughput: N `jobctl worker` processes start on an empty queue (a fresh SQLite \
            database, or with --db an emptied PostgreSQL one) and register; then JOBS no-op jobs \
            are inserted in one transaction; jobs/s = JOBS / (when the last one finished - the \
            clock just before that transaction committed), so process start-up is not counted \
            (as for the PgQueuer drain it is compared with: bench/queue.sh). --cold times from \
            the start of N `worker --once` processes instead. Pickup latency: one idle worker, \
            then jobs submitted one at a time; latency = the job's start time minus its creation \
            time (both stamped by the database clock), p50 and p99.

            The PostgreSQL database must be dedicated to the benchmark and hold no jobs: every \
            run empties the jobctl schema's tables. --backlog (PostgreSQL) queues more jobs than \
            are timed, to measure a drain from a large backlog. --steady measures a producer and \
            the workers at once.

            --json prints one JSON document (every run's seconds, the medians, the pickup \
            percentiles) instead of the Markdown tables.
            """
    )

    @Option(help: "No-op jobs per throughput run.")
    var jobs = 5000

    @Option(help: "Worker process counts to measure, comma-separated.")
    var workers = "1,2,4"

    @Option(help: "--concurrency of each worker.")
    var concurrency = 8

    @Option(help: "Jobs submitted one at a time for the latency measurement (0: no latency measurement).")
    var samples = 200

    @Option(help: "Runs of each throughput configuration; the median is reported.")
    var repeats = 3

    @Option(help: ArgumentHelp("The workers' idle poll interval.", valueName: "duration"))
    var poll = DurationArgument(.milliseconds(100))

    @Option(
        help: ArgumentHelp(
            "A dedicated, empty PostgreSQL database to measure instead of SQLite (it is emptied between runs).",
            valueName: "postgres://…"
        )
    )
    var db: String?

    @Option(
        help: ArgumentHelp(
            "PostgreSQL: queue this many jobs before the clock starts; throughput is then that of the first JOBS completions, and high-priority jobs are submitted during the drain to measure pickup under load.",
            valueName: "count"
        )
    )
    var backlog = 0

    @Option(
        help: ArgumentHelp(
            "Instead of draining: one producer process submits no-op jobs continuously for this long while the workers run them; reports the sustained rate and the queue's age (submitted → claimed).",
            valueName: "duration"
        )
    )
    var steady: DurationArgument?

    @Option(help: "With --steady: concurrent submit loops in the producer.")
    var producers = 4

    @Flag(
        help:
            "Time throughput from the workers' start (process start-up counted), as the figures before 2026-11-24 were."
    )
    var cold = false

    @Flag(help: "Print the results as one JSON document.")
    var json = false

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        // The workers it starts would refuse it, and the run would report no job completed.
        guard DatabaseOptions.workerConcurrency.contains(concurrency) else {
            throw ValidationError(
                "--concurrency is between 1 and \(DatabaseOptions.workerConcurrency.upperBound), as for workers"
            )
        }
        if let db, !db.hasPrefix("postgres://") && !db.hasPrefix("postgresql://") {
            throw ValidationError("--db takes a postgres:// URL (SQLite runs use a fresh file each time)")
        }
        if backlog > 0 && db == nil { throw ValidationError("--backlog is measured on PostgreSQL: give --db") }
        if cold && (backlog > 0 || steady != nil) {
            throw ValidationError("--cold times a drain by itself: not with --backlog or --steady")
        }
    }

    func run() async throws {
        let logger = global.bootstrapLogging()
        try await reportingFailures {
            if let db {
                try await PostgresJobStore.withStore(url: db, logger: logger) { store in
                    guard try await store.statusCounts().isEmpty else {
                        throw CommandFailure.usage(
                            "bench queue --db needs an empty, dedicated database: \(MediaLocation.withoutCredentials(db)) holds jobs"
                        )
                    }
                    // The benchmark's own connections (inserting, counting, emptying the tables).
                    let client = PostgresClient(
                        configuration: try PostgresJobStore.configuration(from: db),
                        backgroundLogger: PostgresJobStore.poolLogger(logger)
                    )
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask { await client.run() }
                        defer { group.cancelAll() }
                        let bench = PostgresBench(store: store, url: db, client: client, logger: logger)
                        try await measure {
                            try await bench.emptyTables()
                            return bench
                        }
                        try await bench.emptyTables()
                    }
                }
            } else {
                try await measure { try SQLiteBench(directory: try scratch()) }
            }
        }
    }

    /// A database for one run: fresh (SQLite) or emptied (PostgreSQL).
    protocol BenchDatabase: Sendable {
        var store: any JobStore { get }
        var url: String { get }
        /// Queues `count` no-op jobs in one transaction; returns the database's clock just
        /// before it commits.
        func insertNoopJobs(_ count: Int) async throws -> Date
        /// How many jobs have completed.
        func completedCount() async throws -> Int
        /// When the `count`th job of priority 0 finished.
        func finished(nth count: Int) async throws -> Date?
        func done()
    }

    /// `count` no-op jobs as `submit` takes them.
    static func noopRequests(_ count: Int) -> [JobRequest] {
        (0..<count).map { JobRequest(kind: .noop, input: "noop-\($0)", output: "", preset: "noop") }
    }

    struct SQLiteBench: BenchDatabase {
        let directory: String
        let sqlite: SQLiteJobStore
        var store: any JobStore { sqlite }
        var url: String { directory + "/jobs.sqlite" }

        init(directory: String) throws {
            self.directory = directory
            sqlite = try SQLiteJobStore(path: directory + "/jobs.sqlite")
        }

        func insertNoopJobs(_ count: Int) async throws -> Date {
            try await sqlite.submitAll(QueueBenchCommand.noopRequests(count))
        }

        func completedCount() async throws -> Int { try await store.statusCounts()[.completed] ?? 0 }

        func finished(nth count: Int) async throws -> Date? {
            let finished = try await store.jobs(status: .completed, limit: count * 2 + 1000)
                .filter { $0.priority == 0 }.compactMap(\.finishedAt).sorted()
            return finished.count >= count ? finished[count - 1] : nil
        }

        func done() { try? FileManager.default.removeItem(atPath: directory) }
    }

    struct PostgresBench: BenchDatabase {
        let store: any JobStore
        let url: String
        let client: PostgresClient
        let logger: Logger

        /// Empties the dedicated benchmark database between runs. This lives here, in the
        /// benchmark that checked the database was empty when it began, and not on the store: no
        /// store API deletes jobs wholesale.
        func emptyTables() async throws {
            try await client.query("TRUNCATE jobctl.jobs, jobctl.workers CASCADE", logger: logger)
        }

        /// Inserts no-op jobs (the rows `submit` writes) in one transaction, so that workers see
        /// them all at once, woken by one NOTIFY, with statistics for the planner as PgQueuer's
        /// drain has (its VACUUM ANALYZE): a table emptied by TRUNCATE has none, and claims would
        /// sort every queued job until autovacuum analyzes it (docs/operations.md). Returns the
        /// database's clock (Unix ms) just before the commit.
        func insertNoopJobs(_ count: Int) async throws -> Date {
            let milliseconds = try await client.withTransaction(logger: logger) { connection -> Int64 in
                var inserted = 0
                while inserted < count {
                    let batch = min(5000, count - inserted)
                    let now = Date()
                    let ids = (0..<batch).map { _ in JobID.make(at: now).rawValue }
                    let inputs = (inserted..<inserted + batch).map { "noop-\($0)" }
                    try await connection.query(
                        """
                        INSERT INTO jobctl.jobs (id, kind, status, input, output, preset, preset_settings, priority, max_attempts,
                            attempt_budget, run_at, metadata, created_at, updated_at)
                        SELECT x.id, 'noop', 'unknown', x.input, '', 'noop', 'null', 0, 3, 3, \(now.milliseconds), '{}',
                            \(now.milliseconds), \(now.milliseconds)
                        FROM unnest(\(ids)::text[], \(inputs)::text[]) AS x(id, input)
                        """,
                        logger: logger
                    )
                    inserted += batch
                }
                try await connection.query("ANALYZE jobctl.jobs", logger: logger)
                try await connection.query("SELECT pg_notify(\(PostgresJobStore.channel), 'job')", logger: logger)
                let rows = try await connection.query(
                    "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint",
                    logger: logger
                )
                for try await value in rows.decode(Int64.self) { return value }
                return 0
            }
            return Date(milliseconds: milliseconds)
        }

        /// Writes every dirty page out (needs a superuser or `pg_checkpoint`; skipped otherwise).
        func checkpoint() async throws {
            _ = try? await client.query("CHECKPOINT", logger: logger)
        }

        /// When the first of the completed jobs was claimed (the database's clock).
        func firstClaim() async throws -> Date {
            let rows = try await client.query(
                "SELECT coalesce(min(started_at), 0) FROM jobctl.jobs WHERE status = 'completed' AND priority = 0",
                logger: logger
            )
            for try await value in rows.decode(Int64.self) { return Date(milliseconds: value) }
            return Date()
        }

        /// How many jobs have completed (through the status index: cheap on a big table).
        func completedCount() async throws -> Int {
            let rows = try await client.query(
                "SELECT count(*) FROM jobctl.jobs WHERE status = 'completed'",
                logger: logger
            )
            for try await count in rows.decode(Int64.self) { return Int(count) }
            return 0
        }

        /// When the `count`th job of priority 0 finished (the database's clock).
        func finished(nth count: Int) async throws -> Date? {
            let rows = try await client.query(
                """
                SELECT finished_at FROM jobctl.jobs WHERE status = 'completed' AND priority = 0
                ORDER BY finished_at LIMIT 1 OFFSET \(count - 1)
                """,
                logger: logger
            )
            for try await value in rows.decode(Int64.self) { return Date(milliseconds: value) }
            return nil
        }

        /// The table's and its indexes' sizes, and what vacuum has done to it.
        func tableState() async throws -> QueueBenchReport.TableState {
            let rows = try await client.query(
                """
                SELECT pg_relation_size('jobctl.jobs'), pg_indexes_size('jobctl.jobs'), s.n_live_tup, s.n_dead_tup,
                    s.autovacuum_count, s.autoanalyze_count
                FROM pg_stat_user_tables s WHERE s.relid = 'jobctl.jobs'::regclass
                """,
                logger: logger
            )
            for try await (table, indexes, live, dead, vacuums, analyzes) in rows.decode(
                (Int64, Int64, Int64, Int64, Int64, Int64).self
            ) {
                return .init(
                    tableBytes: table,
                    indexBytes: indexes,
                    liveRows: live,
                    deadRows: dead,
                    autovacuums: vacuums,
                    autoanalyzes: analyzes
                )
            }
            return .init(tableBytes: 0, indexBytes: 0, liveRows: 0, deadRows: 0, autovacuums: 0, autoanalyzes: 0)
        }

        func done() {}
    }
}
