import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Synchronization
import Testing

/// A webhook receiver (scripts/webhook-receiver.py): verifies signatures with Python's hmac,
/// independently of jobctl's signing code, and logs every request.
typealias Receiver = HelperServer

extension HelperServer {
    convenience init(
        _ directory: TemporaryDirectory,
        name: String,
        secret: String,
        port: Int = 0,
        _ behaviour: [String] = []
    ) async throws {
        try await self.init(
            script: "webhook-receiver.py",
            directory,
            name: name,
            port: port,
            ["--secret", secret] + behaviour
        )
    }

    func url() -> String { url("/hooks/export") }
}

@Suite("Webhooks end to end", .serialized, .timeLimit(.minutes(5)))
struct WebhookDeliveryTests {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    struct Setup: Sendable {
        let directory: TemporaryDirectory
        let store: SQLiteJobStore
        var db: String { directory.file("jobs.sqlite") }

        init(_ label: String) throws {
            directory = try TemporaryDirectory(label)
            store = try SQLiteJobStore(path: directory.file("jobs.sqlite"))
        }

        func submit(_ input: String, _ arguments: [String]) async throws -> JobID {
            let result = try await Jobctl.run(["submit", input, "--db", db, "--allow-private-webhooks"] + arguments)
            try #require(result.status == 0, "submit failed: \(result.stderr)")
            return JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        func worker(_ name: String, secret: String?, _ arguments: [String] = []) throws -> JobctlProcess {
            try JobctlProcess(
                ["worker", "--db", db, "--name", name, "--webhook-retry-scale", "0.01"] + arguments,
                log: directory.file("\(name).log"),
                environment: ["JOBCTL_WEBHOOK_SECRET": secret ?? ""]
            )
        }
    }

    @Test func oneValidSignedEventPerTerminalJob() async throws {
        let setup = try Setup("events")
        defer { setup.directory.remove() }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let input = try await Fixtures.shared.path(.basic)
        // Credentials in the URL are sent as basic auth, a query string (often a token) is sent
        // as it is; neither is shown anywhere.
        let withCredentials =
            receiver.url().replacingOccurrences(of: "http://", with: "http://hook-user:hunter2@")
            + "?token=s3cret-token"
        let completed = try await setup.submit(
            input,
            ["--preset", "low", "--range", "0+1s", "-o", setup.directory.file("ok.mp4"), "--webhook", withCredentials]
        )
        let failed = try await setup.submit(
            setup.directory.file("missing.mov"),
            ["--preset", "low", "--webhook", receiver.url()]
        )
        let cancelled = try await setup.submit(
            input,
            ["--preset", "low", "--webhook", receiver.url(), "-o", setup.directory.file("c.mp4")]
        )
        _ = try await Jobctl.run(["cancel", cancelled.rawValue, "--db", setup.db])
        let silent = try await setup.submit(
            input,
            ["--preset", "low", "--range", "0+1s", "-o", setup.directory.file("silent.mp4")]
        )
        let worker = try setup.worker("w", secret: secret, ["--once", "--allow-private-webhooks"])
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")

        let records = receiver.records()
        #expect(records.count == 3, "\(records.map { $0["type"] ?? "?" })")
        #expect(records.allSatisfy { $0["valid"] as? Bool == true }, "a signature did not verify")
        let byJob = Dictionary(records.map { ($0["jobId"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        #expect(
            byJob[completed.rawValue]?["type"] as? String == "job.completed"
                && byJob[completed.rawValue]?["jobStatus"] as? String == "completed"
        )
        #expect(
            byJob[completed.rawValue]?["authorization"] as? String == "Basic "
                + Data("hook-user:hunter2".utf8).base64EncodedString()
        )
        #expect(byJob[failed.rawValue]?["type"] as? String == "job.failed")
        #expect(byJob[cancelled.rawValue]?["type"] as? String == "job.cancelled")
        #expect(byJob[silent.rawValue] == nil)
        // The body is the job JSON, with the result.
        let body = try #require(byJob[completed.rawValue]?["body"] as? String)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let data = try #require(payload["data"] as? [String: Any])
        #expect((data["result"] as? [String: Any])?["output"] as? String == setup.directory.file("ok.mp4"))
        #expect(payload["timestamp"] is String)
        let show = try await Jobctl.run(["show", completed.rawValue, "--db", setup.db, "--json"])
        let deliveries = try #require(
            (try Jobctl.json(show) as? [String: Any])?["webhookDeliveries"] as? [[String: Any]]
        )
        #expect(
            deliveries.first?["status"] as? String == "delivered"
                && deliveries.first?["id"] as? String == byJob[completed.rawValue]?["id"] as? String
        )
        #expect(
            !show.stdoutText.contains("hunter2") && !worker.log.contains("hunter2") && !body.contains("hunter2"),
            "credentials leaked"
        )
        #expect(show.stdoutText.contains(receiver.url()))
        #expect(
            (byJob[completed.rawValue]?["path"] as? String)?.hasSuffix("?token=s3cret-token") == true,
            "the receiver gets the query"
        )
        #expect(data["webhook"] as? String == receiver.url(), "the body shows the URL without its query")
        var shown = [show.stdoutText, worker.log, body]
        for arguments in [
            ["show", completed.rawValue], ["webhooks", "list"], ["webhooks", "list", "--json"], ["list", "--json"],
        ] {
            shown.append(try await Jobctl.run(arguments + ["--db", setup.db]).stdoutText)
        }
        #expect(
            !shown.contains { $0.contains("s3cret-token") || $0.contains("hunter2") },
            "the webhook's token leaked: \(shown.filter { $0.contains("s3cret") })"
        )
    }

    @Test func failuresAreRetriedWithTheSameWebhookID() async throws {
        let setup = try Setup("retry")
        defer { setup.directory.remove() }
        let flaky = try await Receiver(setup.directory, name: "flaky", secret: secret, ["--fail-first", "2"])
        defer { flaky.stop() }
        let slow = try await Receiver(
            setup.directory,
            name: "slow",
            secret: secret,
            ["--delay", "3", "--delay-first", "1"]
        )
        let input = try await Fixtures.shared.path(.basic)
        let first = try await setup.submit(
            input,
            ["--preset", "low", "--range", "0+1s", "-o", setup.directory.file("a.mp4"), "--webhook", flaky.url()]
        )
        let second = try await setup.submit(
            input,
            ["--preset", "low", "--range", "0+1s", "-o", setup.directory.file("b.mp4"), "--webhook", slow.url()]
        )
        let worker = try setup.worker("w", secret: secret, ["--allow-private-webhooks", "--webhook-timeout", "1s"])
        defer { worker.signal(SIGKILL) }
        let delivered = try await eventually(within: .seconds(60)) {
            let all = try await setup.store.deliveries(job: nil, limit: 10)
            return all.count == 2 && all.allSatisfy { $0.status == .delivered }
        }
        let states = try await setup.store.deliveries(job: nil, limit: 10).map {
            "\($0.status) \($0.log.map { $0.error ?? "ok" })"
        }
        #expect(delivered, "\(states)")
        let flakyRecords = flaky.records()
        #expect(
            flakyRecords.count == 3 && Set(flakyRecords.compactMap { $0["id"] as? String }).count == 1,
            "three attempts, one webhook-id"
        )
        #expect(flakyRecords.allSatisfy { $0["valid"] as? Bool == true })
        let log = try await setup.store.deliveries(job: first, limit: 1).first?.log ?? []
        #expect(log.map(\.statusCode) == [500, 500, 200])
        let slowLog = try await setup.store.deliveries(job: second, limit: 1).first?.log ?? []
        #expect(
            slowLog.first?.statusCode == nil && slowLog.first?.error?.lowercased().contains("timeout") == true,
            "\(slowLog)"
        )
        #expect(Set(slow.records().compactMap { $0["id"] as? String }).count == 1)
    }

    @Test func redirectsAreNotFollowed() async throws {
        let setup = try Setup("redirect")
        defer { setup.directory.remove() }
        let target = try await Receiver(setup.directory, name: "target", secret: secret)
        defer { target.stop() }
        let redirecting = try await Receiver(
            setup.directory,
            name: "redirecting",
            secret: secret,
            ["--redirect", target.url()]
        )
        let input = try await Fixtures.shared.path(.basic)
        let id = try await setup.submit(
            input,
            ["--preset", "low", "--range", "0+1s", "-o", setup.directory.file("a.mp4"), "--webhook", redirecting.url()]
        )
        // A 0.0001 scale: the 24 h of retries take about 9 s.
        let worker = try JobctlProcess(
            ["worker", "--db", setup.db, "--allow-private-webhooks", "--webhook-retry-scale", "0.0001"],
            log: setup.directory.file("w.log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret]
        )
        defer { worker.signal(SIGKILL) }
        #expect(
            try await eventually(within: .seconds(60)) {
                try await setup.store.deliveries(job: id, limit: 1).first?.status == .failed
            }
        )
        let delivery = try #require(try await setup.store.deliveries(job: id, limit: 1).first)
        #expect(delivery.log.allSatisfy { $0.statusCode == 301 } && delivery.log.count > 3)
        #expect(delivery.lastError?.contains("redirects are not followed") == true)
        #expect(target.records().isEmpty, "the redirect was followed")
        // redeliver sends it again, same id.
        let again = try await Jobctl.run(["webhooks", "redeliver", delivery.id, "--db", setup.db])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await eventually(within: .seconds(30)) { redirecting.records().count > delivery.log.count })
        #expect(Set(redirecting.records().compactMap { $0["id"] as? String }) == [delivery.id])
    }

    @Test func aReceiverNotListeningYetGetsTheEventLater() async throws {
        let setup = try Setup("late")
        defer { setup.directory.remove() }
        // Find a free port, then leave it closed for now.
        let probe = try await Receiver(setup.directory, name: "probe", secret: secret)
        defer { probe.stop() }
        let port = probe.port
        try await probe.stopAndWait()
        let input = try await Fixtures.shared.path(.basic)
        let id = try await setup.submit(
            input,
            [
                "--preset", "low", "--range", "0+1s", "-o", setup.directory.file("a.mp4"), "--webhook",
                "http://127.0.0.1:\(port)/late",
            ]
        )
        let worker = try setup.worker("w", secret: secret, ["--allow-private-webhooks"])
        defer { worker.signal(SIGKILL) }
        #expect(
            try await eventually(within: .seconds(30)) {
                (try await setup.store.deliveries(job: id, limit: 1).first?.attempts ?? 0) >= 2
            }
        )
        let receiver = try await Receiver(setup.directory, name: "late", secret: secret, port: port)
        defer { receiver.stop() }
        #expect(
            try await eventually(within: .seconds(30)) {
                try await setup.store.deliveries(job: id, limit: 1).first?.status == .delivered
            }
        )
        let records = receiver.records()
        let delivery = try #require(try await setup.store.deliveries(job: id, limit: 1).first)
        #expect(
            records.count == 1 && records.first?["id"] as? String == delivery.id
                && records.first?["valid"] as? Bool == true
        )
        #expect(delivery.log.first?.statusCode == nil && delivery.log.first?.error != nil)
    }

    /// The event is written with the job's status: a worker killed right after finishing still
    /// gets its event delivered, by another worker's dispatcher.
    @Test func eventOfAKilledWorkerIsDeliveredByAnother() async throws {
        let setup = try Setup("sigkill")
        defer { setup.directory.remove() }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let input = try await Fixtures.shared.path(.basic)
        let id = try await setup.submit(
            input,
            ["--preset", "low", "--range", "0+1s", "-o", setup.directory.file("a.mp4"), "--webhook", receiver.url()]
        )
        // Without a secret this worker's dispatcher sends nothing: the event waits in the outbox.
        let first = try setup.worker("first", secret: nil, ["--allow-private-webhooks"])
        #expect(try await eventually(within: .seconds(60)) { try await setup.store.job(id)?.status == .completed })
        first.signal(SIGKILL)
        try await first.waitForExit(timeout: .seconds(5))
        #expect(receiver.records().isEmpty)
        #expect(try await setup.store.deliveries(job: id, limit: 1).first?.status == .pending)
        let second = try setup.worker("second", secret: secret, ["--once", "--allow-private-webhooks"])
        #expect(try await second.waitForExit(timeout: .seconds(30))?.status == 0)
        #expect(receiver.records().count == 1 && receiver.records().first?["valid"] as? Bool == true)
        #expect(try await setup.store.deliveries(job: id, limit: 1).first?.status == .delivered)
    }

    @Test func theGuardRefusesPrivateAddresses() async throws {
        let setup = try Setup("guard")
        defer { setup.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        for url in [
            "http://127.0.0.1:9/x", "http://10.1.2.3/x", "http://169.254.169.254/latest/meta-data/",
            "http://localhost:8080/x", "http://[::1]/x",
        ] {
            let result = try await Jobctl.run(["submit", input, "--db", setup.db, "--preset", "low", "--webhook", url])
            #expect(result.status == 64 && result.stderr.contains("webhook_forbidden"), "\(url): \(result.stderr)")
        }
        // A name that is not obviously local but resolves to loopback is refused on connect.
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let host = Self.loopbackName()
        let id = try await setup.submit(
            input,
            [
                "--preset", "low", "--range", "0+1s", "-o", setup.directory.file("a.mp4"), "--webhook",
                "http://\(host):\(receiver.port)/x",
            ]
        )
        let worker = try setup.worker("w", secret: secret, ["--once"])
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0)
        let delivery = try #require(try await setup.store.deliveries(job: id, limit: 1).first)
        #expect(
            delivery.status == .failed && delivery.lastError?.contains("webhook_forbidden") == true,
            "\(delivery.lastError ?? "")"
        )
        #expect(receiver.records().isEmpty)
    }

    /// The machine's own name, when it resolves to loopback (/etc/hosts), else `localhost`.
    static func loopbackName() -> String {
        let name = ProcessInfo.processInfo.hostName
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, nil, &result) == 0, let first = result else { return "localhost" }
        defer { freeaddrinfo(result) }
        if first.pointee.ai_family == AF_INET {
            let address = first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt32(bigEndian: $0.pointee.sin_addr.s_addr)
            }
            if address >> 24 == 127 { return name }
        }
        return "localhost"
    }
}
