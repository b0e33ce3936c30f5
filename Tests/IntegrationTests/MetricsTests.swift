import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `worker --metrics-port`: Prometheus text on /metrics, a health check on /healthz, scraped
/// over HTTP from a real worker process.
@Suite("Metrics endpoint", .timeLimit(.minutes(3)))
struct MetricsTests {
    @Test func workerServesMetricsAndHealth() async throws {
        let directory = try TemporaryDirectory("metrics")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        let input = try await Fixtures.shared.path(.basic)
        for (source, output) in [(input, "ok.mp4"), (directory.file("missing.mov"), "missing.mp4")] {
            let result = try await Jobctl.run([
                "submit", source, "--db", db, "--preset", "low", "--range", "0+1s", "-o", directory.file(output),
            ])
            try #require(result.status == 0, "\(result.stderr)")
        }
        let worker = try JobctlProcess(
            [
                "worker", "--db", db, "--name", "metered", "--metrics-port", "0", "--metrics-host", "127.0.0.1",
                "--metrics-interval", "200ms", "--log-format", "json",
            ],
            log: directory.file("worker.log")
        )
        defer { worker.signal(SIGKILL) }
        let base = "http://127.0.0.1:\(try await Self.port(of: worker))"

        var metrics = ""
        #expect(
            try await eventually(within: .seconds(30)) {
                metrics = try await Self.get(base + "/metrics").body
                return metrics.contains(#"jobctl_jobs{status="completed"} 1"#)
                    && metrics.contains(#"jobctl_jobs{status="failed"} 1"#)
            },
            "\(metrics)"
        )
        #expect(metrics.contains(#"jobctl_job_attempts_total{outcome="completed"} 1"#))
        #expect(metrics.contains(#"jobctl_job_attempts_total{outcome="failed"} 1"#))
        #expect(metrics.contains("jobctl_pickup_latency_seconds_count 2"))
        #expect(metrics.contains("jobctl_encode_speed_ratio_count 1"))
        #expect(metrics.contains("jobctl_queue_depth 0"))
        #expect(metrics.contains("jobctl_jobs_running 0"))
        #expect(metrics.contains(#"jobctl_job_duration_seconds_count{outcome="completed"} 1"#))

        let health = try await Self.get(base + "/healthz")
        #expect(health.status == 200)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(health.body.utf8)) as? [String: String])
        #expect(body["status"] == "ok" && body["worker"] == "metered" && body["database"] == "ok", "\(body)")
        let elsewhere = try await Self.get(base + "/elsewhere")
        #expect(elsewhere.status == 404 && elsewhere.body.contains("try /metrics or /healthz"))
        // The same HealthAndMetrics routes `jobctl serve` has: HEAD answers without a body,
        // other methods are 405.
        let head = try await Self.request(base + "/healthz", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.length == health.body.utf8.count, "\(head)")
        #expect(try await Self.request(base + "/metrics", method: "POST").status == 405)

        // Logs are JSON lines, metadata at the top level.
        let lines = try worker.log.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
        let completed = try #require(lines.first { $0["message"] as? String == "Job completed" })
        #expect(
            completed["job.id"] is String && completed["worker"] as? String == "metered"
                && completed["level"] as? String == "info"
        )
        #expect(
            lines.contains {
                $0["message"] as? String == "Job failed" && $0["error.code"] as? String == "input_not_found"
            }
        )
    }

    /// The port a worker started with `--metrics-port 0 --log-format json` logged.
    static func port(of worker: JobctlProcess) async throws -> Int {
        var port: Int?
        _ = await eventually(within: .seconds(30)) {
            port = worker.log.firstMatch(of: /"metrics\.port":"(\d+)"/).flatMap { Int($0.1) }
            return port != nil
        }
        return try #require(port, "no metrics port in the log: \(worker.log)")
    }

    static func request(_ url: String, method: String) async throws -> (status: Int, body: String, length: Int?) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = method
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as? HTTPURLResponse
        return (
            http?.statusCode ?? 0, String(decoding: data, as: UTF8.self),
            (http?.value(forHTTPHeaderField: "Content-Length")).flatMap { Int($0) }
        )
    }

    static func get(_ url: String) async throws -> (status: Int, body: String) {
        let (data, response) = try await URLSession.shared.data(from: try #require(URL(string: url)))
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
