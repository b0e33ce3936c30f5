import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// `jobctl serve` as a process on a real socket, driven with curl, in front of a real worker
/// process and a real webhook receiver.
@Suite("HTTP API over a socket", .serialized, .timeLimit(.minutes(5)))
struct APILiveTests {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    struct Server {
        let process: JobctlProcess
        let base: String
        let key: String
        /// curl's options for this server (`--cacert` for HTTPS).
        let curl: [String]
        /// The roots (`DIR/in`, `DIR/out`): the key's files are in `ROOT/KEYID/`.
        let inputRoot: String
        let outputRoot: String

        /// The key's id: its directory under each root.
        var keyID: String { String(key.split(separator: "_")[1]) }
        /// The roots as a worker takes them (it resolves the key's relative paths under them).
        var roots: [String] { ["--input-root", inputRoot, "--output-root", outputRoot] }

        /// Copies `fixture` into the key's input directory; returns the name a client sends.
        func place(_ fixture: Fixture) async throws -> String {
            let source: String = try await Fixtures.shared.path(fixture)
            let name = "\(fixture)." + (source as NSString).pathExtension
            let directory = (inputRoot as NSString).appendingPathComponent(keyID)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: source,
                toPath: (directory as NSString).appendingPathComponent(name)
            )
            return name
        }

        /// Where the key's relative output `name` is on this host.
        func output(_ name: String) -> String {
            ((outputRoot as NSString).appendingPathComponent(keyID) as NSString).appendingPathComponent(name)
        }

        /// Creates a key, starts `jobctl serve` on a free port, waits for its address.
        init(
            _ directory: TemporaryDirectory,
            db: String,
            extra: [String] = [],
            curl: [String] = []
        ) async throws {
            self.curl = curl
            inputRoot = directory.file("in")
            outputRoot = directory.file("out")
            for root in [inputRoot, outputRoot] {
                try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            }
            let created = try await Jobctl.run(["keys", "create", "--name", "live", "--db", db])
            try #require(created.status == 0, "keys create: \(created.stderr)")
            key = created.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            process = try JobctlProcess(
                [
                    "serve", "--db", db, "--listen", "127.0.0.1:0", "--input-root", inputRoot, "--output-root",
                    outputRoot, "--allow-private-webhooks",
                ] + extra,
                log: directory.file("serve.log")
            )
            var address: String?
            let process = self.process
            _ = await eventually(within: .seconds(20)) {
                address = process.log.split(separator: "\n").first { $0.hasPrefix("listening on ") }
                    .map { String($0.dropFirst("listening on ".count)) }
                return address != nil || process.exited != nil
            }
            base = try #require(address, "serve did not start: \(process.log)")
        }

        /// The job's event stream, read with `curl -N` until the server ends it (or `seconds` pass).
        func events(_ id: String, within seconds: Int) async throws -> ProcessResult {
            try await ProcessRunner.run(
                "curl",
                curl + ["-sS", "-N", "--max-time", "\(seconds)", "-H", "Authorization: Bearer \(key)"]
                    + [base + "/v1/jobs/\(id)/events"]
            )
        }

        /// The event stream of `id` written to `file` as it comes, so that a test can wait for
        /// its first event (the stream is open and watched) before it goes on; the stream's
        /// text when the server ends it.
        func events(_ id: String, within seconds: Int, to file: String) async throws -> (status: Int32, text: String) {
            let result = try await ProcessRunner.run(
                "curl",
                curl + ["-sS", "-N", "--max-time", "\(seconds)", "-H", "Authorization: Bearer \(key)", "-o", file]
                    + [base + "/v1/jobs/\(id)/events"]
            )
            return (result.status, (try? String(contentsOfFile: file, encoding: .utf8)) ?? "")
        }

        /// Whether the stream written to `file` has sent its first event.
        static func opened(_ file: String) -> Bool {
            (try? String(contentsOfFile: file, encoding: .utf8))?.contains("event: status") == true
        }

        /// curl with the key; returns the status code and the body.
        func request(
            _ method: String,
            _ path: String,
            body: String? = nil,
            key: String? = nil,
            timeout: Int = 30
        ) async throws -> (status: Int, json: [String: Any]) {
            var arguments = [
                "-sS", "-X", method, "-H", "Authorization: Bearer \(key ?? self.key)", "-w", "\n%{http_code}",
                "--max-time", "\(timeout)",
            ]
            if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
            let result = try await ProcessRunner.run("curl", curl + arguments + [base + path])
            let lines = result.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
            let status = Int(lines.last ?? "") ?? 0
            let text = lines.dropLast().joined(separator: "\n")
            let json = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
            return (status, json)
        }
    }

    static func script(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/\(name)").path
    }

    /// On a SQLite file and on PostgreSQL: the same routes, the store's own notifications.
    @Test(arguments: ["sqlite", "postgres"])
    func submitOverHTTPThenAWorkerRunsItAndTheLongPollAndTheWebhookSeeItEnd(store: String) async throws {
        let directory = try TemporaryDirectory("api-live")
        defer { directory.remove() }
        let db =
            store == "postgres"
            ? try await TestPostgres.shared.freshDatabase("api") : directory.file("jobs.sqlite")
        let server = try await Server(directory, db: db)
        defer { server.process.signal(SIGKILL) }
        let input = try await server.place(.basic)
        let receiver = try await Receiver(directory, name: "receiver", secret: secret)
        defer { receiver.stop() }

        let output = server.output("api.mp4")
        let submitted = try await server.request(
            "POST",
            "/v1/jobs",
            body:
                #"{"input":"\#(input)","output":"api.mp4","preset":"low","range":"1s+2s","webhook":"\#(receiver.url())"}"#
        )
        #expect(submitted.status == 201, "\(submitted.json)")
        let id = try #require(submitted.json["id"] as? String)
        // The event stream, opened before a worker runs: curl returns when the server ends it.
        let eventsFile = directory.file("events.txt")
        let events = Task { try await server.events(id, within: 90, to: eventsFile) }
        try #require(await eventually(within: .seconds(30)) { Server.opened(eventsFile) }, "the stream never opened")

        let worker = try JobctlProcess(
            ["worker", "--db", db, "--name", "w", "--once", "--allow-private-webhooks"] + server.roots,
            log: directory.file("worker.log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret]
        )
        let waited = try await server.request("GET", "/v1/jobs/\(id)?wait=60s", timeout: 90)
        #expect(waited.status == 200)
        #expect(waited.json["status"] as? String == "completed", "\(waited.json) \(worker.log)")
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")

        // ffprobe, not our reader: the range asked for over HTTP.
        let probe = try await FFProbe.probe(output)
        #expect(abs((probe.format.durationSeconds ?? 0) - 2) < 0.15, "duration \(probe.format.duration ?? "?")")
        #expect(probe.video?.codec_name == "h264")
        let records = receiver.records()
        #expect(records.count == 1 && records.first?["type"] as? String == "job.completed")
        #expect(records.first?["valid"] as? Bool == true)
        #expect(records.first?["jobId"] as? String == id)

        // The stream saw the job start and end, and ended by itself.
        let stream = try await events.value
        #expect(stream.status == 0, "curl: \(stream.text)")
        let kinds = stream.text.split(separator: "\n").filter { $0.hasPrefix("event: ") }
        let statuses = stream.text.split(separator: "\n").filter { $0.hasPrefix("data: ") }.compactMap {
            ((try? JSONSerialization.jsonObject(with: Data($0.dropFirst(6).utf8))) as? [String: Any])?["status"]
                as? String
        }
        #expect(kinds.first == "event: status" && statuses.first == "unknown", "\(stream.text)")
        #expect(statuses.last == "completed", "\(statuses)")
        // SQLite wakes the stream at every write; PostgreSQL sends no notification for a claim,
        // so a job shorter than the 1 s tick may go from queued to completed in one event.
        if store == "sqlite" { #expect(statuses.contains("reading"), "\(statuses)") }

        // The webhook log over HTTP, then a redelivery with the same webhook-id.
        let log = try await server.request("GET", "/v1/jobs/\(id)/deliveries")
        let deliveries = log.json["deliveries"] as? [[String: Any]] ?? []
        #expect(deliveries.count == 1 && deliveries.first?["status"] as? String == "delivered", "\(log.json)")
        let attempts = deliveries.first?["log"] as? [[String: Any]] ?? []
        #expect(attempts.first?["statusCode"] as? Int == 200, "\(attempts)")
        let message = try #require(deliveries.first?["id"] as? String)
        #expect(try await server.request("POST", "/v1/jobs/\(id)/deliveries/\(message)/redeliver").status == 202)
        let dispatcher = try JobctlProcess(
            ["webhooks", "dispatch", "--db", db, "--allow-private-webhooks"],
            log: directory.file("dispatch.log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret]
        )
        defer { dispatcher.signal(SIGKILL) }
        let redelivered = await eventually(within: .seconds(20)) { receiver.records().count == 2 }
        #expect(redelivered, "\(dispatcher.log)")
        #expect(Set(receiver.records().compactMap { $0["id"] as? String }) == [message])
    }

    @Test func thumbnailsSubmittedOverHTTPAreWrittenByAWorker() async throws {
        let directory = try TemporaryDirectory("api-thumbs")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        let server = try await Server(directory, db: db)
        let input = try await server.place(.basic)
        defer { server.process.signal(SIGKILL) }
        let output = server.output("thumbs")
        let submitted = try await server.request(
            "POST",
            "/v1/jobs",
            body:
                #"{"kind":"thumbnails","input":"\#(input)","output":"thumbs","format":"png","thumbnails":{"count":3,"size":"160x"}}"#
        )
        #expect(submitted.status == 201, "\(submitted.json)")
        let id = try #require(submitted.json["id"] as? String)
        let worker = try JobctlProcess(
            ["worker", "--db", db, "--name", "w", "--once"] + server.roots,
            log: directory.file("worker.log")
        )
        let waited = try await server.request("GET", "/v1/jobs/\(id)?wait=60s", timeout: 90)
        #expect(waited.json["status"] as? String == "completed", "\(waited.json) \(worker.log)")
        _ = try await worker.waitForExit(timeout: .seconds(60))
        let files = (try? FileManager.default.contentsOfDirectory(atPath: output))?.sorted() ?? []
        #expect(files == ["thumb-001.png", "thumb-002.png", "thumb-003.png"], "\(files)")
        for file in files {
            let probe = try await FFProbe.probe((output as NSString).appendingPathComponent(file))
            #expect(probe.video?.codec_name == "png")
            #expect(probe.video?.width == 160, "\(file): \(probe.video?.width ?? 0) wide")
        }
    }

    @Test func httpsWithACertificateAndSlowOrSilentClientsCutOffAtTheRequestTimeout() async throws {
        let directory = try TemporaryDirectory("api-tls")
        defer { directory.remove() }
        let (certificate, key) = (directory.file("cert.pem"), directory.file("key.pem"))
        let made = try await ProcessRunner.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
                "-out", certificate, "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
            ]
        )
        try #require(made.status == 0, "openssl: \(made.stderr)")
        let db = directory.file("jobs.sqlite")
        let server = try await Server(
            directory,
            db: db,
            extra: ["--tls-cert", certificate, "--tls-key", key, "--request-timeout", "1s"],
            curl: ["--cacert", certificate]
        )
        defer { server.process.signal(SIGKILL) }
        #expect(server.base.hasPrefix("https://"), "\(server.base)")
        let listed = try await server.request("GET", "/v1/jobs")
        #expect(listed.status == 200, "\(listed)")
        // Plain HTTP to the TLS port gets no HTTP answer.
        let plain = try await ProcessRunner.run(
            "curl",
            [
                "-sS", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}",
                server.base.replacingOccurrences(of: "https:", with: "http:") + "/healthz",
            ]
        )
        #expect(plain.stdoutText == "000", "\(plain.stdoutText)")

        // Clients that are too slow, over TLS (scripts/slow-client.py): a body a byte every half
        // second, a connection that says nothing, headers a byte at a time.
        let port = try #require(server.base.split(separator: ":").last.map(String.init))
        let result = try await ProcessRunner.run(
            "python3",
            [Self.script("slow-client.py"), port, certificate, server.key]
        )
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(result.stdoutText) \(result.stderr)")
        let slow = lines.first { $0.hasPrefix("slow-body") } ?? ""
        #expect(slow.contains("408"), "\(slow)")
        let silent = lines.first { $0.hasPrefix("silent") } ?? ""
        #expect(silent.hasPrefix("silent b''"), "the idle connection stayed open: \(silent)")
        let dribble = lines.first { $0.hasPrefix("dribble") } ?? ""
        #expect(
            dribble.hasPrefix("dribble True"),
            "a client sending headers a byte at a time kept the connection: \(dribble)"
        )
    }

    /// A client that asks for megabyte pages and stops reading (scripts/stall-client.py) is
    /// disconnected once its responses have waited unread for the request timeout, instead of
    /// pinning them in the server's memory for as long as it keeps the connection.
    @Test func aClientThatStopsReadingIsDisconnected() async throws {
        let directory = try TemporaryDirectory("api-stall")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        let server = try await Server(directory, db: db, extra: ["--request-timeout", "2s", "--rate-limit", "0"])
        defer { server.process.signal(SIGKILL) }
        let store = try SQLiteJobStore(path: db)
        let metadata = Dictionary(uniqueKeysWithValues: (0..<8).map { ("k\($0)", String(repeating: "x", count: 1000)) })
        for index in 0..<150 {
            _ = try await store.submit(
                JobRequest(
                    input: "in.mov",
                    output: "o\(index).mp4",
                    preset: "low",
                    metadata: metadata,
                    owner: server.keyID
                )
            )
        }
        let port = try #require(server.base.split(separator: ":").last.map(String.init))
        let result = try await ProcessRunner.run(
            "python3",
            [Self.script("stall-client.py"), port, server.key, "40", "6"]
        )
        #expect(result.stdoutText.contains("closed yes"), "\(result.stdoutText) \(result.stderr)")
        // A client that reads slowly but steadily (a page taking longer than the timeout) is
        // not cut.
        let slow = try await ProcessRunner.run("python3", [Self.script("stall-client.py"), port, server.key, "slow"])
        #expect(slow.stdoutText.hasPrefix("complete yes"), "\(slow.stdoutText) \(slow.stderr)")
        // The server goes on serving others.
        #expect(try await server.request("GET", "/v1/jobs?limit=1").status == 200)
    }

    /// HTTP's edges over a raw socket (scripts/http-edges.py): a long poll with `Connection:
    /// close` and bytes pipelined after it still gets its answer; an event stream whose client
    /// left frees the key's watch slot at once; a body declared too large is 413 before it is
    /// sent; `HEAD` answers every `GET` route.
    @Test func httpEdges() async throws {
        let directory = try TemporaryDirectory("api-edges")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        let server = try await Server(directory, db: db, extra: ["--rate-limit", "0", "--max-watches-per-key", "1"])
        defer { server.process.signal(SIGKILL) }
        let submitted = try await server.request(
            "POST",
            "/v1/jobs",
            body: #"{"input":"https://media.example/a.mov","output":"a.mp4","preset":"low"}"#
        )
        let id = try #require(submitted.json["id"] as? String, "\(submitted.json)")
        let port = try #require(server.base.split(separator: ":").last.map(String.init))
        let result = try await ProcessRunner.run("python3", [Self.script("http-edges.py"), port, server.key, id])
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 4, "\(result.stdoutText) \(result.stderr)")
        for line in lines { #expect(line.hasSuffix(" ok"), "\(line)") }
    }

    /// Long polls are parked below Hummingbird (docs/api.md): pipelining, `Connection: close`, a
    /// bad key, a wait past the request timeout, the key's share, clients that leave, keep-alive
    /// after an answer, on raw sockets (scripts/poll-client.py).
    @Test func longPollsParkedBelowTheRouterKeepHTTPsRules() async throws {
        let directory = try TemporaryDirectory("api-polls")
        defer { directory.remove() }
        let server = try await Server(
            directory,
            db: directory.file("jobs.sqlite"),
            extra: ["--request-timeout", "1s", "--max-watches-per-key", "3", "--public-metrics"]
        )
        defer { server.process.signal(SIGKILL) }
        let queued = try await server.request(
            "POST",
            "/v1/jobs",
            body: #"{"input":"https://media.example/a.mov","output":"a.mp4","preset":"low"}"#
        )
        let id = try #require(queued.json["id"] as? String, "\(queued)")
        let port = try #require(server.base.split(separator: ":").last.map(String.init))
        let result = try await ProcessRunner.run("python3", [Self.script("poll-client.py"), port, server.key, id])
        let lines = Dictionary(
            result.stdoutText.split(separator: "\n").map { line in
                (String(line.prefix { $0 != " " }), String(line.drop { $0 != " " }.dropFirst()))
            },
            uniquingKeysWith: { first, _ in first }
        )
        #expect(result.status == 0, "\(result.stdoutText) \(result.stderr)")
        // Both answered, in order, the plain GET after the poll's wait (1.5 s, answered at the
        // watch's first tick after it).
        let pipelined = (lines["pipelined"] ?? "").split(separator: " ")
        #expect(pipelined.prefix(2) == ["200", "200"], "\(lines)")
        #expect((Double(pipelined.last ?? "") ?? 0) >= 1.4, "\(lines)")
        #expect(lines["close"] == "200 True", "\(lines)")
        #expect(lines["badkey"] == "401 unauthorized", "\(lines)")
        let outlives = (lines["outlives"] ?? "").split(separator: " ")
        #expect(outlives.first == "200" && outlives.last == "False", "\(lines)")
        #expect((Double(outlives.dropFirst().first ?? "") ?? 0) >= 2.9, "\(lines)")
        #expect(lines["share"] == "429 200 200 200", "\(lines)")
        #expect(lines["left"] == "3 0", "\(lines)")
        #expect(lines["keepalive"] == "200 200", "\(lines)")
        let body = (lines["body"] ?? "").split(separator: " ")
        #expect(body.first == "200" && (Double(body.last ?? "") ?? 0) >= 0.9, "\(lines)")
    }
}

extension APILiveTests {
    /// The tests of APILiveTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("HTTP API over a socket: timing", .serialized)
    struct Timing {
        /// PostgreSQL going away (a TCP proxy in front of it, killed): requests are answered 503
        /// within seconds, not each held for the 15 s a command waits; when it is back, 200 again.
        @Test func whilePostgreSQLIsDownRequestsFailFastAndRecover() async throws {
            let directory = try TemporaryDirectory("api-pg-down")
            defer { directory.remove() }
            let database = try await TestPostgres.shared.freshDatabase("down")
            let url = try #require(URLComponents(string: database))
            let target = "\(url.host ?? "127.0.0.1"):\(url.port ?? 5432)"
            var proxy = try await HelperServer(script: "tcp-proxy.py", directory, name: "proxy", ["--target", target])
            var through = url
            through.port = proxy.port
            let db = try #require(through.string)
            let server = try await Server(directory, db: db)
            defer { server.process.signal(SIGKILL) }
            #expect(try await server.request("GET", "/v1/jobs?limit=1").status == 200)

            proxy.stop()
            _ = try await server.request("GET", "/v1/jobs?limit=1")  // the pool finds its connection gone
            for _ in 0..<4 {
                let started = ContinuousClock.now
                let answer = try await server.request("GET", "/v1/jobs?limit=1", timeout: 30)
                #expect(answer.status == 503, "\(answer.json)")
                #expect(
                    ContinuousClock.now - started < .seconds(6),
                    "a request waited \(ContinuousClock.now - started)"
                )
            }
            proxy = try await HelperServer(
                script: "tcp-proxy.py",
                directory,
                name: "proxy",
                port: proxy.port,
                ["--target", target]
            )
            defer { proxy.stop() }
            #expect(
                try await eventually(within: .seconds(60)) {
                    try await server.request("GET", "/v1/jobs?limit=1").status == 200
                },
                "the server did not come back: \(server.process.log.suffix(1500))"
            )
        }

        @Test func cancelOverHTTPStopsARunningJobWithinTwoSecondsAndSIGTERMAnswersTheLongPolls() async throws {
            let directory = try TemporaryDirectory("api-cancel")
            defer { directory.remove() }
            let db = directory.file("jobs.sqlite")
            let server = try await Server(directory, db: db)
            let input = try await server.place(.long)
            defer { server.process.signal(SIGKILL) }
            let worker = try JobctlProcess(
                ["worker", "--db", db, "--name", "w"] + server.roots,
                log: directory.file("worker.log")
            )
            defer { worker.signal(SIGKILL) }

            let submitted = try await server.request(
                "POST",
                "/v1/jobs",
                body: #"{"input":"\#(input)","output":"long.mp4","preset":"highest"}"#
            )
            let id = try #require(submitted.json["id"] as? String, "\(submitted)")
            let running = await eventually(within: .seconds(30)) {
                (try? await server.request("GET", "/v1/jobs/\(id)").json["status"] as? String) == "reading"
            }
            try #require(running, "the job never started: \(worker.log)")
            let asked = ContinuousClock.now
            let cancel = try await server.request("POST", "/v1/jobs/\(id)/cancel")
            #expect(cancel.status == 202)
            let ended = try await server.request("GET", "/v1/jobs/\(id)?wait=10s")
            #expect(ended.json["status"] as? String == "cancelled", "\(ended.json)")
            #expect(
                ContinuousClock.now - asked < .seconds(2) + .milliseconds(500),
                "cancel took \(ContinuousClock.now - asked)"
            )
            #expect(!FileManager.default.fileExists(atPath: server.output("long.mp4")), "a partial output was left")
            #expect(try await server.request("POST", "/v1/jobs/\(id)/cancel").status == 409)

            // A long poll in flight when the server is told to stop is answered, then it exits 0.
            let queued = try await server.request(
                "POST",
                "/v1/jobs",
                body: #"{"input":"https://media.example/never.mov","output":"q.mp4","preset":"low"}"#
            )
            let queuedID = try #require(queued.json["id"] as? String)
            worker.signal(SIGTERM)
            _ = try await worker.waitForExit(timeout: .seconds(30))
            let started = ContinuousClock.now
            let polling = Task {
                let answer = try await server.request("GET", "/v1/jobs/\(queuedID)?wait=20s")
                return (answer.status, answer.json["status"] as? String)
            }
            let streamFile = directory.file("shutdown-events.txt")
            let streaming = Task { try await server.events(queuedID, within: 25, to: streamFile) }
            // The stream, asked for after the poll, has answered: the poll is in the server too.
            try #require(
                await eventually(within: .seconds(20)) { Server.opened(streamFile) },
                "the stream never opened"
            )
            server.process.signal(SIGTERM)
            let answer = try await polling.value
            #expect(answer == (200, "unknown"), "\(answer)")
            // An event stream in flight is ended (its client reconnects elsewhere), not left open.
            let stream = try await streaming.value
            #expect(stream.status == 0 && stream.text.hasPrefix("id: 1\nevent: status\n"), "\(stream.text)")
            #expect(ContinuousClock.now - started < .seconds(10), "the long poll was not answered at shutdown")
            #expect(try await server.process.waitForExit(timeout: .seconds(30))?.status == 0, "\(server.process.log)")
        }
    }
}
