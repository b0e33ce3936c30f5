import DashboardHTTP
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import JobKinds
import Logging
import NIOCore
import Queue
import QueueSQLite
import Testing

/// A job's output files on its page: only its own listed files, only to who may see the job,
/// only inside its output directory, with byte ranges.
@Suite("Dashboard files")
struct DashboardFileTests {
    typealias F = APIRouteTests.Fixture
    typealias B = DashboardRouteTests
    static let worker = WorkerIdentity(name: "files-test", host: "localhost", pid: 1, version: "test")

    /// A completed job of `key` whose output is `output` (relative to the key's directory).
    static func completed(
        _ f: F,
        key: String,
        output: String,
        result: JSONValue,
        webhook: String? = nil
    ) async throws -> Job {
        let owner = String(key.split(separator: "_")[1])
        var request = JobRequest(input: "in.mov", output: output, preset: "low", presetSettings: .object([:]))
        request.owner = owner
        request.webhook = webhook
        let job = try await f.store.submit(request).job
        let claimed = try #require(try await f.store.claim(as: worker, limit: 1, lease: .seconds(30)).first)
        #expect(try await f.store.complete(claimed.lease, result: result, tracks: []))
        return try #require(try await f.store.job(job.id))
    }

    static func write(_ f: F, key: String, _ path: String, bytes: Int) throws {
        let owner = String(key.split(separator: "_")[1])
        let full = f.directory.file("\(owner)/\(path)")
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true
        )
        try Data((0..<bytes).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: full))
    }

    @Test("an export's MP4: whole, a range, past the end; another tenant's and unlisted names are not found")
    func export() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let job = try await Self.completed(f, key: f.submit, output: "talk.mp4", result: .object([:]))
        try Self.write(f, key: f.submit, "talk.mp4", bytes: 1000)
        try Self.write(f, key: f.submit, "other.mp4", bytes: 10)
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            let path = "/ui/jobs/\(job.id.rawValue)/files/"
            let page = String(
                buffer: try await client.execute(
                    uri: "/ui/jobs/\(job.id.rawValue)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            #expect(
                page.contains(
                    #"<video class="output" controls preload="metadata" src="../jobs/\#(job.id.rawValue)/files/talk.mp4">"#
                )
            )
            let whole = try await client.execute(
                uri: path + "talk.mp4",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(whole.status == .ok && whole.body.readableBytes == 1000)
            #expect(whole.headers[.contentType] == "video/mp4" && whole.headers[.acceptRanges] == "bytes")
            #expect(whole.headers[.contentSecurityPolicy]?.contains("sandbox") == true)
            var ranged = HTTPFields([HTTPField(name: .cookie, value: browser.cookie)])
            ranged[.range] = "bytes=100-199"
            let part = try await client.execute(uri: path + "talk.mp4", method: .get, headers: ranged)
            #expect(part.status == .partialContent && part.body.readableBytes == 100)
            #expect(part.headers[.contentRange] == "bytes 100-199/1000")
            #expect(part.body.getBytes(at: 0, length: 1) == [UInt8(100 % 251)])
            ranged[.range] = "bytes=-10"
            #expect(
                try await client.execute(uri: path + "talk.mp4", method: .get, headers: ranged).headers[.contentRange]
                    == "bytes 990-999/1000"
            )
            ranged[.range] = "bytes=5000-"
            #expect(
                try await client.execute(uri: path + "talk.mp4", method: .get, headers: ranged).status
                    == .rangeNotSatisfiable
            )
            for name in ["other.mp4", "..%2Ftalk.mp4", "%2E%2E"] {
                let response = try await client.execute(
                    uri: path + name,
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
                #expect(response.status == .notFound, "\(name)")
            }
            let stranger = try await B.signIn(client, key: f.other)
            #expect(
                try await client.execute(uri: path + "talk.mp4", method: .get, headers: [.cookie: stranger.cookie])
                    .status == .notFound
            )
            #expect(try await client.execute(uri: path + "talk.mp4", method: .get).status == .seeOther, "signed out")
        }
    }

    @Test("a file set's pictures inline; a file swapped for a link out of the job's directory is not served")
    func fileSet() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let files: JSONValue = .object([
            "files": .array(["t-001.jpg", "t-002.jpg", "notes.txt"].map { .object(["name": .string($0)]) })
        ])
        let job = try await Self.completed(f, key: f.submit, output: "thumbs", result: files)
        try Self.write(f, key: f.submit, "thumbs/t-001.jpg", bytes: 50)
        try Self.write(f, key: f.submit, "thumbs/notes.txt", bytes: 5)
        // Another tenant's secret, and a link to it where the job's second picture should be.
        try Self.write(f, key: f.other, "secret.jpg", bytes: 7)
        let otherID = String(f.other.split(separator: "_")[1])
        let owner = String(f.submit.split(separator: "_")[1])
        try FileManager.default.createSymbolicLink(
            atPath: f.directory.file("\(owner)/thumbs/t-002.jpg"),
            withDestinationPath: f.directory.file("\(otherID)/secret.jpg")
        )
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            let page = String(
                buffer: try await client.execute(
                    uri: "/ui/jobs/\(job.id.rawValue)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            #expect(page.contains(#"<img src="../jobs/\#(job.id.rawValue)/files/t-001.jpg""#))
            #expect(!page.contains("t-002.jpg"), "a linked file is offered")
            let path = "/ui/jobs/\(job.id.rawValue)/files/"
            #expect(
                try await client.execute(uri: path + "t-001.jpg", method: .get, headers: [.cookie: browser.cookie])
                    .headers[.contentType] == "image/jpeg"
            )
            #expect(
                try await client.execute(uri: path + "t-002.jpg", method: .get, headers: [.cookie: browser.cookie])
                    .status == .notFound
            )
            let text = try await client.execute(
                uri: path + "notes.txt",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(
                text.headers[.contentDisposition] == "attachment"
                    && text.headers[.contentType] == "application/octet-stream"
            )
        }
    }

    @Test("a file in a bucket, on a server configured without an object store: 503 saying so, not 'try again'")
    func bucketWithoutAStore() async throws {
        let f = try await F {
            $0.paths = PathConfinement(
                inputRoot: $0.paths.inputRoot,
                outputRoot: $0.paths.outputRoot,
                objectRoot: "s3://media/tenants/"
            )
        }
        defer { f.directory.remove() }
        let owner = String(f.submit.split(separator: "_")[1])
        let job = try await Self.completed(
            f,
            key: f.submit,
            output: "s3://media/tenants/\(owner)/out/talk.mp4",
            result: .object([:])
        )
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            let response = try await client.execute(
                uri: "/ui/jobs/\(job.id.rawValue)/files/talk.mp4",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(response.status == .serviceUnavailable)
            #expect(String(buffer: response.body).contains("cannot read the object store"))
        }
    }

    @Test("file reads: at most so many at once per key and in all; a response dropped gives its place back")
    func fileReadLimit() {
        let limit = FileReadLimit(total: 3, perKey: 2)
        var first: FileReadLimit.Ticket? = try? limit.take(key: "a").get()
        let second = try? limit.take(key: "a").get()
        #expect(first != nil && second != nil)
        #expect(throws: FileReadLimit.Busy.key) { try limit.take(key: "a").get() }
        let third = try? limit.take(key: "b").get()
        #expect(third != nil, "another key has its own share")
        #expect(throws: FileReadLimit.Busy.server) { try limit.take(key: "c").get() }
        first = nil
        #expect(throws: Never.self) { _ = try limit.take(key: "a").get() }
        withExtendedLifetime((second, third)) {}
    }

    @Test("a waveform job's peaks are drawn on its page; peaks that are not audiowaveform's are only linked")
    func waveform() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let files: JSONValue = .object(["files": .array([.object(["name": .string("peaks.json")])])])
        let drawn = try await Self.completed(f, key: f.submit, output: "wave", result: files)
        let broken = try await Self.completed(f, key: f.submit, output: "broken", result: files)
        let owner = String(f.submit.split(separator: "_")[1])
        let peaks =
            #"{"version":2,"channels":1,"sample_rate":48000,"samples_per_pixel":256,"bits":8,"length":4,"data":[-10,12,-128,127,0,0,-64,64]}"#
        try FileManager.default.createDirectory(
            atPath: f.directory.file("\(owner)/wave"),
            withIntermediateDirectories: true
        )
        try Data(peaks.utf8).write(to: URL(fileURLWithPath: f.directory.file("\(owner)/wave/peaks.json")))
        try FileManager.default.createDirectory(
            atPath: f.directory.file("\(owner)/broken"),
            withIntermediateDirectories: true
        )
        try Data(#"{"data":"<script>"}"#.utf8).write(
            to: URL(fileURLWithPath: f.directory.file("\(owner)/broken/peaks.json"))
        )
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            func page(_ job: Job) async throws -> String {
                String(
                    buffer: try await client.execute(
                        uri: "/ui/jobs/\(job.id.rawValue)",
                        method: .get,
                        headers: [.cookie: browser.cookie]
                    ).body
                )
            }
            let shown = try await page(drawn)
            #expect(shown.contains(#"<svg class="waveform""#))
            // Four pixels across 600, the second at full scale (127 of 128 up, 128 down), the
            // third silent on the middle line.
            #expect(
                shown.contains(
                    #"points="0.0,54.4 150.0,0.5 300.0,60.0 450.0,30.0 450.0,90.0 300.0,60.0 150.0,120.0 0.0,64.7""#
                )
            )
            #expect(shown.contains("files/peaks.json"))
            let notDrawn = try await page(broken)
            #expect(!notDrawn.contains("<svg class=\"waveform\"") && !notDrawn.contains("<script>"))
            #expect(notDrawn.contains("files/peaks.json"))
        }
    }
}

/// The fleet page: an admin's, fed by the sampler's minutes.
@Suite("Dashboard fleet page")
struct DashboardFleetTests {
    typealias F = APIRouteTests.Fixture
    typealias B = DashboardRouteTests

    @Test("admins see workers and the minutes the sampler recorded; other keys are refused")
    func fleet() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let worker = WorkerIdentity(name: "fleet-worker-1", host: "render-7", pid: 42, version: "0.1.0")
        try await f.store.workerStarted(worker)
        let job = try await DashboardFileTests.completed(f, key: f.submit, output: "x.mp4", result: .object([:]))
        let sampler = FleetSampler(store: f.store, logger: Logger(label: "fleet-test"))
        // Also the minute the job ended in, should the clock have turned since.
        let ended = MinuteSample.minute(of: job.finishedAt ?? Date())
        let minute = try #require(await sampler.record(after: ended))
        #expect(minute == MinuteSample.minute(of: Date()))
        let recorded = try await f.store.minutes(from: ended, through: minute)
        #expect(recorded.reduce(0) { $0 + $1.completed } == 1, "\(recorded)")
        try await f.app.test(.router) { client in
            let admin = try await B.signIn(client, key: f.admin)
            let page = try await client.execute(uri: "/ui/fleet", method: .get, headers: [.cookie: admin.cookie])
            #expect(page.status == .ok)
            let body = String(buffer: page.body)
            #expect(body.contains("fleet-worker-1") && body.contains("render-7") && body.contains("live"))
            #expect(body.contains("highest 1 jobs; failed"), "the completed job is charted")
            #expect(body.contains(#"aria-current="page">Fleet"#))
            let jobs = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: admin.cookie]).body
            )
            #expect(jobs.contains(">Fleet</a>"))
            let tenant = try await B.signIn(client, key: f.submit)
            let refused = try await client.execute(uri: "/ui/fleet", method: .get, headers: [.cookie: tenant.cookie])
            #expect(refused.status == .forbidden)
            #expect(!String(buffer: refused.body).contains("fleet-worker-1"))
            let tenantJobs = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: tenant.cookie]).body
            )
            #expect(!tenantJobs.contains(">Fleet</a>"), "a tenant is offered the fleet page")
        }
    }
}
