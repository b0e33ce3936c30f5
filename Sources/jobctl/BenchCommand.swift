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
            Throughput: JOBS no-op jobs are inserted into a fresh SQLite database, then N `jobctl \
            worker --once` processes run them all; jobs/s = JOBS / the time until the last worker \
            exits (process start-up included). Pickup latency: one idle worker, then jobs \
            submitted one at a time; latency = the job's start time minus its creation time \
            (both stamped by the database clock), p50 and p99.

            With --db postgres://…, the same on PostgreSQL, timed from warm workers: N `jobctl \
            worker` processes start on the empty queue and register, then the JOBS are inserted \
            in one transaction; jobs/s = JOBS / (the last job's finishedAt - the database's \
            clock just before that transaction committed), so process start-up is not counted \
            (as for the PgQueuer drain it is compared with: bench/queue.sh). The database must be \
            dedicated to the benchmark and hold no jobs: every run empties the jobctl schema's \
            tables.

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
                    try await measure { try await PostgresBench(store: store, url: db, logger: logger) }
                    try await PostgresBench.emptyTables(url: db, logger: logger)
                }
            } else {
                try await measure { try SQLiteBench(directory: try scratch()) }
            }
        }
    }

    /// A database for one run: fresh (SQLite) or emptied (PostgreSQL).
    private protocol BenchDatabase {
        var store: any JobStore { get }
        var url: String { get }
        /// Queues `count` no-op jobs.
        func fill(_ count: Int) async throws
        /// Whether throughput is timed from warm workers (`warmThroughput`), not from their start.
        var warm: Bool { get }
        func done()
    }

    private struct SQLiteBench: BenchDatabase {
        let directory: String
        let store: any JobStore
        var url: String { directory + "/jobs.sqlite" }
        var warm: Bool { false }

        init(directory: String) throws {
            self.directory = directory
            store = try SQLiteJobStore(path: directory + "/jobs.sqlite")
        }

        func fill(_ count: Int) async throws {
            for index in 0..<count {
                _ = try await store.submit(JobRequest(kind: .noop, input: "noop-\(index)", output: "", preset: "noop"))
            }
        }

        func done() { try? FileManager.default.removeItem(atPath: directory) }
    }

    private struct PostgresBench: BenchDatabase {
        let store: any JobStore
        let url: String
        var warm: Bool { true }

        init(store: PostgresJobStore, url: String, logger: Logger) async throws {
            try await Self.emptyTables(url: url, logger: logger)
            self.store = store
            self.url = url
        }

        /// Empties the dedicated benchmark database between runs, over a connection of its own.
        /// This lives here, in the benchmark that checked the database was empty when it began,
        /// and not on the store: no store API deletes jobs wholesale.
        static func emptyTables(url: String, logger: Logger) async throws {
            let client = PostgresClient(
                configuration: try PostgresJobStore.configuration(from: url),
                backgroundLogger: logger
            )
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await client.run() }
                try await client.query("TRUNCATE jobctl.jobs, jobctl.workers CASCADE", logger: logger)
                group.cancelAll()
            }
        }

        /// Multi-row inserts of 1,000 rows (one submit per job would take longer than the run:
        /// each commits on its own); the rows are what `submit` writes for a no-op job.
        func fill(_ count: Int) async throws {
            try await Self.insertNoopJobs(count, url: url)
        }

        static func insertNoopJobs(
            _ count: Int,
            url: String,
            logger: Logger = Logger(label: "jobctl.bench")
        ) async throws {
            _ = try await insertNoopJobsAtOnce(count, url: url, logger: logger)
        }

        /// Inserts the jobs in one transaction (workers see them all at once, woken by one
        /// NOTIFY); returns the database's clock (Unix ms) just before it commits.
        static func insertNoopJobsAtOnce(
            _ count: Int,
            url: String,
            logger: Logger = Logger(label: "jobctl.bench")
        ) async throws -> Int64 {
            let client = PostgresClient(
                configuration: try PostgresJobStore.configuration(from: url),
                backgroundLogger: logger
            )
            return try await withThrowingTaskGroup(of: Int64?.self) { group in
                group.addTask {
                    await client.run()
                    return nil
                }
                defer { group.cancelAll() }
                return try await client.withTransaction(logger: logger) { connection in
                    var inserted = 0
                    while inserted < count {
                        let batch = min(1000, count - inserted)
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
                    // Statistics for the planner, as PgQueuer's drain has (its VACUUM ANALYZE):
                    // a table emptied by TRUNCATE has none, and claims would sort every queued
                    // job until autovacuum analyzes it (docs/operations.md, "After a bulk load").
                    try await connection.query("ANALYZE jobctl.jobs", logger: logger)
                    try await connection.query("SELECT pg_notify(\(PostgresJobStore.channel), 'job')", logger: logger)
                    let rows = try await connection.query(
                        "SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint",
                        logger: logger
                    )
                    for try await value in rows.decode(Int64.self) { return value }
                    return 0
                }
            }
        }

        /// How many jobs completed, and the last one's `finishedAt` (Unix ms, the database's clock).
        static func completion(url: String, logger: Logger) async throws -> (completed: Int, lastFinished: Int64) {
            let client = PostgresClient(
                configuration: try PostgresJobStore.configuration(from: url),
                backgroundLogger: logger
            )
            return try await withThrowingTaskGroup(of: (Int, Int64)?.self) { group in
                group.addTask {
                    await client.run()
                    return nil
                }
                defer { group.cancelAll() }
                let rows = try await client.query(
                    "SELECT count(*) FILTER (WHERE status = 'completed'), coalesce(max(finished_at), 0) FROM jobctl.jobs",
                    logger: logger
                )
                for try await (completed, last) in rows.decode((Int64, Int64).self) { return (Int(completed), last) }
                return (0, 0)
            }
        }

        func done() {}
    }

    private func measure(_ fresh: () async throws -> any BenchDatabase) async throws {
        let counts = workers.split(separator: ",").compactMap { Int($0) }
        var report = QueueBenchReport(
            store: db == nil ? "sqlite" : "postgres",
            jobs: jobs,
            concurrency: concurrency,
            throughput: [],
            pickup: nil
        )
        if !json {
            print(
                "| worker processes | concurrency each | jobs | runs | median seconds | jobs/s (median) | jobs/s (all runs) |"
            )
            print("|---:|---:|---:|---:|---:|---:|---|")
        }
        for count in counts {
            var runs: [Double] = []
            for _ in 0..<max(1, repeats) {
                let database = try await fresh()
                let (seconds, completed) =
                    database.warm
                    ? try await warmThroughput(workers: count, in: database)
                    : try await throughput(workers: count, in: database)
                guard completed == jobs else {
                    throw CommandFailure.failed(code: "internal", "only \(completed) of \(jobs) jobs completed")
                }
                runs.append(seconds)
            }
            let row = QueueBenchReport.Throughput(workers: count, jobs: jobs, seconds: runs)
            report.throughput.append(row)
            if !json {
                let all = runs.map { "\(Int(Double(jobs) / $0))" }.joined(separator: ", ")
                print(
                    "| \(count) | \(concurrency) | \(jobs) | \(runs.count) | \(String(format: "%.2f", row.medianSeconds)) | **\(Int(row.jobsPerSecond))** | \(all) |"
                )
            }
        }
        if samples > 0 {
            let latencies = try await pickupLatencies(in: try await fresh()).sorted()
            func percentile(_ p: Double) -> Double {
                latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
            }
            report.pickup = .init(
                samples: latencies.count,
                p50: percentile(0.5),
                p99: percentile(0.99),
                max: latencies.last ?? 0
            )
            if !json {
                print("")
                print(
                    "Pickup latency (idle worker, poll \(poll.duration)), \(latencies.count) jobs: p50 \(String(format: "%.1f", percentile(0.5))) ms, p99 \(String(format: "%.1f", percentile(0.99))) ms, max \(String(format: "%.1f", latencies.last ?? 0)) ms"
                )
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
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
        try await database.fill(jobs)
        let start = ContinuousClock.now
        let processes = try (0..<count).map { try startWorker(database.url, name: "bench-\($0)", once: true) }
        for process in processes { process.waitUntilExit() }
        let seconds = (ContinuousClock.now - start).seconds
        let completed = try await store.statusCounts()[.completed] ?? 0
        return (seconds, completed)
    }

    /// PostgreSQL: `count` workers started on the empty queue and registered; then the jobs in
    /// one transaction; timed from just before its commit to the last `finishedAt` (both the
    /// database's clock). Start-up is not counted, as for the PgQueuer drain (bench/queue.sh).
    private func warmThroughput(
        workers count: Int,
        in database: any BenchDatabase
    ) async throws -> (seconds: Double, completed: Int) {
        defer { database.done() }
        let logger = Logger(label: "jobctl.bench")
        let processes = try (0..<count).map { try startWorker(database.url, name: "bench-\($0)", once: false) }
        defer {
            for process in processes where process.isRunning { process.terminate() }
            for process in processes { process.waitUntilExit() }
        }
        let ready = ContinuousClock.now + .seconds(30)
        while try await database.store.workers().filter({ $0.stoppedAt == nil }).count < count {
            guard ContinuousClock.now < ready else {
                throw CommandFailure.failed(code: "internal", "the benchmark's workers did not start within 30 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Registered workers then start their claim loop and LISTEN: give them a moment.
        try await Task.sleep(for: .milliseconds(300))
        let started = try await PostgresBench.insertNoopJobsAtOnce(jobs, url: database.url, logger: logger)
        let deadline = ContinuousClock.now + .seconds(600)
        while true {
            try await Task.sleep(for: .milliseconds(200))
            let (completed, last) = try await PostgresBench.completion(url: database.url, logger: logger)
            if completed >= jobs || ContinuousClock.now > deadline {
                return (Double(last - started) / 1000, completed)
            }
        }
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

        init(workers: Int, jobs: Int, seconds: [Double]) {
            self.workers = workers
            self.seconds = seconds
            medianSeconds = seconds.sorted()[seconds.count / 2]
            jobsPerSecond = Double(jobs) / medianSeconds
        }
    }

    struct Pickup: Encodable {
        let samples: Int
        /// Milliseconds.
        let p50: Double
        let p99: Double
        let max: Double
    }

    let store: String
    let jobs: Int
    let concurrency: Int
    var throughput: [Throughput]
    var pickup: Pickup?
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
            throw CommandFailure.failed(code: "internal", "the receiver did not start (\(receiver))")
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
                throw CommandFailure.failed(code: "internal", "only \(count) of \(jobs) webhooks arrived in 5 min")
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
