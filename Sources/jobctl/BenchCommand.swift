import ArgumentParser
import Foundation
import JobctlCore
import Logging
import PostgresNIO
import Queue
import QueuePostgres
import QueueSQLite
import SafeHTTP
import Webhooks

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks (docs/benchmarks.md).",
        subcommands: [QueueBenchCommand.self, WebhookBenchCommand.self]
    )
}

/// Queue throughput and pickup latency on SQLite or PostgreSQL, with real worker processes of
/// this binary.
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
        guard WorkerCommand.concurrencyRange.contains(concurrency) else {
            throw ValidationError(
                "--concurrency is between 1 and \(WorkerCommand.concurrencyRange.upperBound), as for workers"
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
    private protocol BenchDatabase: Sendable {
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
    private static func noopRequests(_ count: Int) -> [JobRequest] {
        (0..<count).map { JobRequest(kind: .noop, input: "noop-\($0)", output: "", preset: "noop") }
    }

    private struct SQLiteBench: BenchDatabase {
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

    private struct PostgresBench: BenchDatabase {
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

    private func measure(_ fresh: () async throws -> any BenchDatabase) async throws {
        let counts = workers.split(separator: ",").compactMap { Int($0) }
        var report = QueueBenchReport(
            store: db == nil ? "sqlite" : "postgres",
            jobs: jobs,
            backlog: backlog,
            concurrency: concurrency,
            throughput: [],
            pickup: nil
        )
        if let steady {
            try await measureSteady(counts, for: steady.duration, fresh, report: &report)
            return
        }
        if !json {
            print(
                "| worker processes | concurrency each | jobs | runs | median seconds | jobs/s (median) | jobs/s (all runs) |"
            )
            print("|---:|---:|---:|---:|---:|---:|---|")
        }
        for count in counts {
            var runs: [Double] = []
            var underLoad: [Double] = []
            var states: [QueueBenchReport.TableState] = []
            for _ in 0..<max(1, repeats) {
                let database = try await fresh()
                let completed: Int
                let seconds: Double
                if cold {
                    (seconds, completed) = try await throughput(workers: count, in: database)
                } else {
                    let run = try await warmThroughput(workers: count, in: database)
                    (seconds, completed) = (run.seconds, run.completed)
                    underLoad += run.pickups
                    states += run.states
                }
                guard completed >= jobs else {
                    throw CommandFailure.failed(code: .internalError, "only \(completed) of \(jobs) jobs completed")
                }
                runs.append(seconds)
            }
            let row = QueueBenchReport.Throughput(
                workers: count,
                jobs: jobs,
                seconds: runs,
                pickupUnderLoad: underLoad.isEmpty ? nil : .init(underLoad),
                tables: states
            )
            report.throughput.append(row)
            if !json {
                let all = runs.map { "\(Int(Double(jobs) / $0))" }.joined(separator: ", ")
                print(
                    "| \(count) | \(concurrency) | \(jobs) | \(runs.count) | \(String(format: "%.2f", row.medianSeconds)) | **\(Int(row.jobsPerSecond))** | \(all) |"
                )
            }
        }
        if !json {
            for row in report.throughput {
                if let pickup = row.pickupUnderLoad {
                    print(
                        "Pickup under load (\(row.workers) workers, priority jobs during the drain, \(pickup.samples) jobs): p50 \(String(format: "%.1f", pickup.p50)) ms, p99 \(String(format: "%.1f", pickup.p99)) ms"
                    )
                }
                for state in row.tables {
                    print(
                        "  \(state.moment): table \(state.tableBytes / 1_048_576) MiB, indexes \(state.indexBytes / 1_048_576) MiB, \(state.liveRows) live / \(state.deadRows) dead rows, \(state.autovacuums) autovacuums, \(state.autoanalyzes) autoanalyzes"
                    )
                }
            }
        }
        if samples > 0 {
            let pickup = QueueBenchReport.Pickup(try await pickupLatencies(in: try await fresh()))
            report.pickup = pickup
            if !json {
                print("")
                print(
                    "Pickup latency (idle worker, poll \(poll.duration)), \(pickup.samples) jobs: p50 \(String(format: "%.1f", pickup.p50)) ms, p99 \(String(format: "%.1f", pickup.p99)) ms, max \(String(format: "%.1f", pickup.max)) ms"
                )
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        }
    }

    private func measureSteady(
        _ counts: [Int],
        for window: Duration,
        _ fresh: () async throws -> any BenchDatabase,
        report: inout QueueBenchReport
    ) async throws {
        if !json {
            print(
                "| worker processes | concurrency each | seconds | submitted/s | completed/s (within the window) | queued at the end | queue age p50 | p99 | max |"
            )
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        }
        for count in counts {
            for _ in 0..<max(1, repeats) {
                let run = try await steadyRun(workers: count, for: window, in: try await fresh())
                report.steady.append(run)
                if !json {
                    print(
                        "| \(count) | \(concurrency) | \(String(format: "%.1f", run.seconds)) | \(Int(run.submittedPerSecond)) | **\(Int(run.completedPerSecond))** | \(run.queuedAtEnd) | \(String(format: "%.1f", run.age.p50)) ms | \(String(format: "%.1f", run.age.p99)) ms | \(String(format: "%.1f", run.age.max)) ms |"
                    )
                }
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        }
    }

    /// Workers started and registered; then `producers` loops submit no-op jobs (the real
    /// `submit`, one transaction each) for `window`; then the queue is left to drain.
    private func steadyRun(
        workers count: Int,
        for window: Duration,
        in database: any BenchDatabase
    ) async throws -> QueueBenchReport.Steady {
        defer { database.done() }
        let store = database.store
        let processes = try (0..<count).map { try startWorker(database.url, name: "bench-\($0)", once: false) }
        defer {
            for process in processes where process.isRunning { process.terminate() }
            for process in processes { process.waitUntilExit() }
        }
        try await waitUntilRegistered(count, in: store)
        try await Task.sleep(for: .milliseconds(300))
        let started = Date()
        let end = ContinuousClock.now + window
        let submitted = try await withThrowingTaskGroup(of: Int.self) { group in
            for producer in 0..<max(1, producers) {
                group.addTask {
                    var count = 0
                    while ContinuousClock.now < end {
                        _ = try await store.submit(
                            JobRequest(kind: .noop, input: "steady-\(producer)-\(count)", output: "", preset: "noop")
                        )
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        let closed = Date()
        let queuedAtEnd = try await store.statusCounts()[.unknown] ?? 0
        let drained = ContinuousClock.now + .seconds(120)
        while try await store.statusCounts()[.completed] ?? 0 < submitted, ContinuousClock.now < drained {
            try await Task.sleep(for: .milliseconds(200))
        }
        let finished = try await store.jobs(status: .completed, limit: submitted + 1)
        let seconds = closed.timeIntervalSince(started)
        let withinWindow = finished.filter { ($0.finishedAt ?? .distantFuture) <= closed }.count
        let ages = finished.compactMap { job in job.startedAt.map { $0.timeIntervalSince(job.createdAt) * 1000 } }
        return QueueBenchReport.Steady(
            workers: count,
            seconds: seconds,
            submitted: submitted,
            completedPerSecond: Double(withinWindow) / seconds,
            submittedPerSecond: Double(submitted) / seconds,
            queuedAtEnd: queuedAtEnd,
            age: QueueBenchReport.Pickup(ages)
        )
    }

    /// Waits until `count` workers have registered and not stopped (30 s at most).
    private func waitUntilRegistered(_ count: Int, in store: any JobStore) async throws {
        let ready = ContinuousClock.now + .seconds(30)
        while try await store.workers().filter({ $0.stoppedAt == nil }).count < count {
            guard ContinuousClock.now < ready else {
                throw CommandFailure.failed(code: .internalError, "the benchmark's workers did not start within 30 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "jobctl-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    private func startWorker(_ database: String, name: String, once: Bool) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments =
            [
                "worker", "--db", database, "--name", name, "--concurrency", "\(concurrency)", "--poll",
                "\(poll.duration.seconds)",
            ]
            + (once ? ["--once"] : [])
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    private func throughput(
        workers count: Int,
        in database: any BenchDatabase
    ) async throws -> (seconds: Double, completed: Int) {
        defer { database.done() }
        let store = database.store
        _ = try await database.insertNoopJobs(jobs)
        let start = ContinuousClock.now
        let processes = try (0..<count).map { try startWorker(database.url, name: "bench-\($0)", once: true) }
        for process in processes { process.waitUntilExit() }
        let seconds = (ContinuousClock.now - start).seconds
        let completed = try await store.statusCounts()[.completed] ?? 0
        return (seconds, completed)
    }

    /// `count` workers started on the empty queue and registered; then JOBS jobs in one
    /// transaction; timed from just before its commit to when the last finished (both the
    /// database's clock). Start-up is not counted, as for the PgQueuer drain (bench/queue.sh).
    ///
    /// With a backlog (PostgreSQL): the backlog is inserted and checkpointed first (a backlog
    /// builds up over time; the insert's own WAL should not weigh on the drain), then the
    /// workers start; timed from the first claim to the JOBSth completion, while `samples`
    /// high-priority jobs are submitted one at a time: their pickup latency is the claim
    /// path's under load.
    private func warmThroughput(workers count: Int, in database: any BenchDatabase) async throws -> WarmRun {
        defer { database.done() }
        let postgres = backlog > 0 ? database as? PostgresBench : nil
        var states: [QueueBenchReport.TableState] = []
        if let postgres {
            _ = try await postgres.insertNoopJobs(backlog)
            try await postgres.checkpoint()
            states.append(try await postgres.tableState().at("after the insert"))
        }
        let processes = try (0..<count).map { try startWorker(database.url, name: "bench-\($0)", once: false) }
        defer {
            for process in processes where process.isRunning { process.terminate() }
            for process in processes { process.waitUntilExit() }
        }
        try await waitUntilRegistered(count, in: database.store)
        var started: Date?
        if postgres == nil {
            // Registered workers then start their claim loop and listen: give them a moment.
            try await Task.sleep(for: .milliseconds(300))
            started = try await database.insertNoopJobs(jobs)
        }
        let prioritySamples = backlog > 0 ? samples : 0
        let pickups = try await withThrowingTaskGroup(of: [(submitted: Date, milliseconds: Double)].self) { group in
            if prioritySamples > 0 {
                group.addTask {
                    var pickups: [(submitted: Date, milliseconds: Double)] = []
                    for index in 0..<prioritySamples {
                        try await Task.sleep(for: .milliseconds(Int64.random(in: 5...25)))
                        let (job, _) = try await database.store.submit(
                            JobRequest(
                                kind: .noop,
                                input: "priority-\(index)",
                                output: "",
                                preset: "noop",
                                priority: 10
                            )
                        )
                        var picked: Job?
                        while picked?.startedAt == nil {
                            try await Task.sleep(for: .milliseconds(2))
                            picked = try await database.store.job(job.id)
                        }
                        if let at = picked?.startedAt {
                            pickups.append((job.createdAt, at.timeIntervalSince(job.createdAt) * 1000))
                        }
                    }
                    return pickups
                }
            }
            let deadline = ContinuousClock.now + .seconds(900)
            while try await database.completedCount() < jobs + prioritySamples {
                guard ContinuousClock.now < deadline else { break }
                try await Task.sleep(for: .milliseconds(backlog > 0 ? 500 : 200))
            }
            return try await group.reduce([], +)
        }
        let last = try await database.finished(nth: jobs)
        if let postgres { started = try await postgres.firstClaim() }
        if let postgres { states.append(try await postgres.tableState().at("after \(jobs) completions")) }
        return WarmRun(
            seconds: last.flatMap { last in started.map { last.timeIntervalSince($0) } } ?? .infinity,
            completed: last == nil ? 0 : jobs,
            // Only those submitted during the timed drain.
            pickups: pickups.filter { $0.submitted <= last ?? .distantFuture }.map(\.milliseconds),
            states: states
        )
    }

    private struct WarmRun {
        let seconds: Double
        let completed: Int
        let pickups: [Double]
        let states: [QueueBenchReport.TableState]
    }

    private func pickupLatencies(in database: any BenchDatabase) async throws -> [Double] {
        defer { database.done() }
        let store = database.store
        let worker = try startWorker(database.url, name: "bench-idle", once: false)
        defer { worker.terminate() }
        try await Task.sleep(for: .milliseconds(500))
        var latencies: [Double] = []
        for index in 0..<samples {
            let (job, _) = try await store.submit(
                JobRequest(kind: .noop, input: "latency-\(index)", output: "", preset: "noop")
            )
            var finished: Job?
            while finished == nil {
                try await Task.sleep(for: .milliseconds(2))
                finished = try await store.job(job.id).flatMap { $0.status == .completed ? $0 : nil }
            }
            if let started = finished?.startedAt { latencies.append(started.timeIntervalSince(job.createdAt) * 1000) }
            // Idle again, at a random point of the poll cycle.
            try await Task.sleep(for: .milliseconds(Int64.random(in: 5...40)))
        }
        return latencies
    }
}

/// What `bench queue --json` prints.
struct QueueBenchReport: Encodable {
    struct Throughput: Encodable {
        let workers: Int
        /// Every run's duration, and their median.
        let seconds: [Double]
        let medianSeconds: Double
        let jobsPerSecond: Double
        /// With a backlog: high-priority jobs' pickup during the drains.
        let pickupUnderLoad: Pickup?
        /// With a backlog: the table after the insert and after the run.
        let tables: [TableState]

        init(workers: Int, jobs: Int, seconds: [Double], pickupUnderLoad: Pickup?, tables: [TableState]) {
            self.workers = workers
            self.seconds = seconds
            medianSeconds = seconds.sorted()[seconds.count / 2]
            jobsPerSecond = Double(jobs) / medianSeconds
            self.pickupUnderLoad = pickupUnderLoad
            self.tables = tables
        }
    }

    /// Milliseconds.
    struct Pickup: Encodable {
        let samples: Int
        let p50: Double
        let p99: Double
        let max: Double

        init(_ latencies: [Double]) {
            let sorted = latencies.sorted()
            func percentile(_ p: Double) -> Double {
                sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
            }
            samples = sorted.count
            p50 = percentile(0.5)
            p99 = percentile(0.99)
            max = sorted.last ?? 0
        }
    }

    struct TableState: Encodable {
        var moment = ""
        let tableBytes: Int64
        let indexBytes: Int64
        let liveRows: Int64
        let deadRows: Int64
        let autovacuums: Int64
        let autoanalyzes: Int64

        func at(_ moment: String) -> TableState {
            var state = self
            state.moment = moment
            return state
        }
    }

    /// `--steady`: one run per worker count and repeat.
    struct Steady: Encodable {
        let workers: Int
        let seconds: Double
        let submitted: Int
        /// Jobs completed within the window, per second.
        let completedPerSecond: Double
        let submittedPerSecond: Double
        /// Jobs still queued when the window closed.
        let queuedAtEnd: Int
        /// The queue's age: each job's claim minus its submission, in milliseconds.
        let age: Pickup
    }

    let store: String
    let jobs: Int
    let backlog: Int
    let concurrency: Int
    var throughput: [Throughput]
    var pickup: Pickup?
    var steady: [Steady] = []
}

/// Webhook deliveries per second and latency (terminal status → received), to a local receiver.
struct WebhookBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract:
            "Measure webhook deliveries per second and latency (job finished → request received) to a local receiver.",
        discussion: """
            JOBS no-op jobs with a webhook are inserted into a fresh database; one worker runs them \
            and its dispatcher delivers the events to scripts/webhook-receiver.py on loopback \
            (signature checks off, HTTP/1.1 keep-alive). Deliveries/s = JOBS / the time from the \
            worker's start to the last request received; latency = arrival - the job's finishedAt.
            """
    )

    @Option(help: "Jobs (events) per run.")
    var jobs = 2000

    @Option(help: "Webhook requests the dispatcher sends at once.")
    var webhookConcurrency = 8

    @Option(help: "Path to scripts/webhook-receiver.py.")
    var receiver = "scripts/webhook-receiver.py"

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        let directory = NSTemporaryDirectory() + "jobctl-bench-webhooks-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/received.jsonl"
        let receiverProcess = Process()
        receiverProcess.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        receiverProcess.arguments = ["python3", receiver, "--port", "0", "--log", log]
        let output = Pipe()
        receiverProcess.standardOutput = output
        try receiverProcess.run()
        defer { kill(receiverProcess.processIdentifier, SIGKILL) }
        var line = Data()
        while true {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { break }
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).replacingOccurrences(of: "listening ", with: ""))
        else {
            throw CommandFailure.failed(code: .internalError, "the receiver did not start (\(receiver))")
        }

        let database = directory + "/jobs.sqlite"
        let store = try SQLiteJobStore(path: database)
        for index in 0..<jobs {
            _ = try await store.submit(
                JobRequest(
                    kind: .noop,
                    input: "noop-\(index)",
                    output: "",
                    preset: "noop",
                    webhook: "http://127.0.0.1:\(port)/hook"
                )
            )
        }
        let worker = Process()
        worker.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        worker.arguments = [
            "worker", "--db", database, "--concurrency", "32", "--allow-private-webhooks", "--webhook-concurrency",
            "\(webhookConcurrency)",
        ]
        worker.environment = ProcessInfo.processInfo.environment.merging([
            "JOBCTL_WEBHOOK_SECRET": WebhookSecret.generate()
        ]) { $1 }
        worker.standardError = FileHandle.nullDevice
        let start = Date()
        try worker.run()
        defer { kill(worker.processIdentifier, SIGKILL) }
        // Count lines while waiting (cheap: the measurement must not eat the CPU it measures); parse once.
        var count = 0
        while count < jobs {
            try await Task.sleep(for: .milliseconds(100))
            count = ((try? Data(contentsOf: URL(fileURLWithPath: log))) ?? Data()).reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
            if Date().timeIntervalSince(start) > 300 {
                throw CommandFailure.failed(code: .internalError, "only \(count) of \(jobs) webhooks arrived in 5 min")
            }
        }
        let received = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        let last = received.compactMap { $0["receivedAt"] as? Double }.max() ?? Date().timeIntervalSince1970
        let seconds = last - start.timeIntervalSince1970
        let finished = Dictionary(
            try await store.jobs(status: .completed, limit: jobs * 2).map { ($0.id.rawValue, $0.finishedAt ?? start) },
            uniquingKeysWith: { a, _ in a }
        )
        let latencies = received.compactMap { record -> Double? in
            guard let id = record["jobId"] as? String, let at = record["receivedAt"] as? Double, let done = finished[id]
            else { return nil }
            return (at - done.timeIntervalSince1970) * 1000
        }.sorted()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        print("| events | dispatcher concurrency | seconds | deliveries/s | latency p50 | latency p99 |")
        print("|---:|---:|---:|---:|---:|---:|")
        print(
            "| \(jobs) | \(webhookConcurrency) | \(String(format: "%.2f", seconds)) | **\(Int(Double(jobs) / seconds))** | \(String(format: "%.0f", percentile(0.5))) ms | \(String(format: "%.0f", percentile(0.99))) ms |"
        )
        print("")
        print("Idle latency (one event at a time, nothing else queued):")
        var idle: [Double] = []
        for index in 0..<20 {
            let (job, _) = try await store.submit(
                JobRequest(
                    kind: .noop,
                    input: "idle-\(index)",
                    output: "",
                    preset: "noop",
                    webhook: "http://127.0.0.1:\(port)/idle"
                )
            )
            var done: Job?
            while done == nil {
                try await Task.sleep(for: .milliseconds(5))
                done = try await store.job(job.id).flatMap { $0.status == .completed ? $0 : nil }
            }
            var arrival: Double?
            while arrival == nil {
                try await Task.sleep(for: .milliseconds(5))
                arrival =
                    ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                        line -> Double? in
                        guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                            record["jobId"] as? String == job.id.rawValue
                        else { return nil }
                        return record["receivedAt"] as? Double
                    }.first
            }
            idle.append((arrival! - done!.finishedAt!.timeIntervalSince1970) * 1000)
        }
        idle.sort()
        print(
            "p50 \(String(format: "%.1f", idle[idle.count / 2])) ms, max \(String(format: "%.1f", idle.last!)) ms over \(idle.count) events"
        )
    }
}
