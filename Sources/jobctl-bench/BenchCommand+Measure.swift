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

/// The queue benchmark's measurements.
extension QueueBenchCommand {
    func measure(_ fresh: () async throws -> any BenchDatabase) async throws {
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

    func measureSteady(
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
    func steadyRun(
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
    func waitUntilRegistered(_ count: Int, in store: any JobStore) async throws {
        let ready = ContinuousClock.now + .seconds(30)
        while try await store.workers().filter({ $0.stoppedAt == nil }).count < count {
            guard ContinuousClock.now < ready else {
                throw CommandFailure.failed(code: .internalError, "the benchmark's workers did not start within 30 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "jobctl-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    func startWorker(_ database: String, name: String, once: Bool) throws -> Process {
        let process = Process()
        process.executableURL = BenchCommand.jobctl
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

    func throughput(
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
    func warmThroughput(workers count: Int, in database: any BenchDatabase) async throws -> WarmRun {
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

    struct WarmRun {
        let seconds: Double
        let completed: Int
        let pickups: [Double]
        let states: [QueueBenchReport.TableState]
    }

    func pickupLatencies(in database: any BenchDatabase) async throws -> [Double] {
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
