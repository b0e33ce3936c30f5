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
        worker.executableURL = BenchCommand.jobctl
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
