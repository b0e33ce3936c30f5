import ArgumentParser
import Foundation
import Queue
import QueueSQLite

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks (docs/benchmarks.md).",
        subcommands: [QueueBenchCommand.self]
    )
}

/// Queue throughput and pickup latency on SQLite, with real worker processes of this binary.
struct QueueBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "queue",
        abstract: "Measure queue throughput (no-op jobs per second, N worker processes) and pickup latency (submit → claimed).",
        discussion: """
            Throughput: JOBS no-op jobs are inserted into a fresh SQLite database, then N `jobctl \
            worker --once` processes run them all; jobs/s = JOBS / the time until the last worker \
            exits (process start-up included). Pickup latency: one idle worker, then jobs \
            submitted one at a time; latency = the job's start time minus its creation time \
            (both stamped by the database clock), p50 and p99.
            """
    )

    @Option(help: "No-op jobs per throughput run.")
    var jobs = 5000

    @Option(help: "Worker process counts to measure, comma-separated.")
    var workers = "1,2,4"

    @Option(help: "--concurrency of each worker.")
    var concurrency = 8

    @Option(help: "Jobs submitted one at a time for the latency measurement.")
    var samples = 200

    @Option(help: "Runs of each throughput configuration; the median is reported.")
    var repeats = 3

    @Option(help: ArgumentHelp("The workers' idle poll interval.", valueName: "duration"))
    var poll = DurationArgument(.milliseconds(100))

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        let counts = workers.split(separator: ",").compactMap { Int($0) }
        print("| worker processes | concurrency each | jobs | runs | median seconds | jobs/s (median) | jobs/s (all runs) |")
        print("|---:|---:|---:|---:|---:|---:|---|")
        for count in counts {
            var runs: [Double] = []
            for _ in 0..<max(1, repeats) {
                let (seconds, completed) = try await throughput(workers: count)
                guard completed == jobs else { throw CommandFailure.usage("only \(completed) of \(jobs) jobs completed") }
                runs.append(seconds)
            }
            let median = runs.sorted()[runs.count / 2]
            let all = runs.map { "\(Int(Double(jobs) / $0))" }.joined(separator: ", ")
            print("| \(count) | \(concurrency) | \(jobs) | \(runs.count) | \(String(format: "%.2f", median)) | **\(Int(Double(jobs) / median))** | \(all) |")
        }
        let latencies = try await pickupLatencies().sorted()
        func percentile(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        print("")
        print("Pickup latency (idle worker, poll \(poll.duration)), \(latencies.count) jobs: p50 \(String(format: "%.1f", percentile(0.5))) ms, p99 \(String(format: "%.1f", percentile(0.99))) ms, max \(String(format: "%.1f", latencies.last ?? 0)) ms")
    }

    private func scratch() throws -> String {
        let directory = NSTemporaryDirectory() + "jobctl-bench-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    private func startWorker(_ database: String, name: String, once: Bool) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        process.arguments = ["worker", "--db", database, "--name", name, "--concurrency", "\(concurrency)", "--poll", "\(poll.duration.seconds)"]
            + (once ? ["--once"] : [])
        process.standardError = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    private func throughput(workers count: Int) async throws -> (seconds: Double, completed: Int) {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/jobs.sqlite"
        let store = try SQLiteJobStore(path: database)
        for index in 0..<jobs {
            _ = try await store.submit(JobRequest(kind: .noop, input: "noop-\(index)", output: "", preset: "noop"))
        }
        let start = ContinuousClock.now
        let processes = try (0..<count).map { try startWorker(database, name: "bench-\($0)", once: true) }
        for process in processes { process.waitUntilExit() }
        let seconds = (ContinuousClock.now - start).seconds
        let completed = try await store.jobs(status: .completed, limit: jobs * 2).count
        return (seconds, completed)
    }

    private func pickupLatencies() async throws -> [Double] {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/jobs.sqlite"
        let store = try SQLiteJobStore(path: database)
        let worker = try startWorker(database, name: "bench-idle", once: false)
        defer { worker.terminate() }
        try await Task.sleep(for: .milliseconds(500))
        var latencies: [Double] = []
        for index in 0..<samples {
            let (job, _) = try await store.submit(JobRequest(kind: .noop, input: "latency-\(index)", output: "", preset: "noop"))
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
