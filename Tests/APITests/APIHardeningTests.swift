import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import JobAPIServer
import Logging
import Media
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// What the second adversarial pass found in the HTTP API (issue 25), each pinned: what one
/// client can make the server or the database pay.
@Suite("HTTP API hardening")
struct APIHardeningTests {
    @Test("/healthz: one trivial statement at most once a second for 50 callers, never a count of the job table")
    func healthIsCheap() async throws {
        let directory = try TemporaryDirectory("health")
        defer { directory.remove() }
        let store = CountingStore(try SQLiteJobStore(path: directory.file("jobs.sqlite")))
        let app = Application(
            router: APIServer.router(
                APIConfiguration(store: store, catalog: try PresetCatalog(customFile: nil)),
                logger: Logger(label: "api-test")
            )
        )
        try await app.test(.router) { client in
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.execute(uri: "/healthz", method: .get).status }
                }
                for try await status in group { #expect(status == .ok) }
            }
        }
        #expect(store.count("statusCounts") == 0, "a health check counted the job table")
        #expect((1...3).contains(store.count("ping")), "\(store.count("ping")) pings for 50 health checks")
    }

    typealias F = APIRouteTests.Fixture

    /// Every numeric option of every kind over its edges: refused with 422 `invalid_request`
    /// naming the field, never stored (2^32 samples per pixel once crashed every worker that
    /// claimed the job; 2^63−1 was stored and failed later as `preset_unknown`).
    @Test("numbers outside their domain are 422 invalid_request naming the field, for every kind")
    func numbersAreBoundedAtSubmit() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let input = "in.mov"
        let refused: [(kind: String, options: String, field: String)] = [
            ("waveform", #""samplesPerPixel":4294967296"#, "waveform.samplesPerPixel"),
            ("waveform", #""samplesPerPixel":2147483648"#, "waveform.samplesPerPixel"),
            ("waveform", #""samplesPerPixel":9223372036854775807"#, "waveform.samplesPerPixel"),
            ("waveform", #""samplesPerPixel":1"#, "waveform.samplesPerPixel"),
            ("waveform", #""samplesPerPixel":-2"#, "waveform.samplesPerPixel"),
            ("waveform", #""pixelsPerSecond":0"#, "waveform.pixelsPerSecond"),
            ("waveform", #""pixelsPerSecond":4294967296"#, "waveform.pixelsPerSecond"),
            ("waveform", #""track":-1"#, "waveform.track"),
            ("waveform", #""track":4294967296"#, "waveform.track"),
            ("waveform", #""bits":0"#, "waveform.bits"),
            ("waveform", #""files":"png","width":0"#, "waveform.width"),
            ("waveform", #""files":"png","height":2147483648"#, "waveform.height"),
            ("waveform", #""samplesPerPixel":2.5"#, "waveform.samplesPerPixel"),
            ("waveform", #""samplesPerPixel":1e300"#, "waveform.samplesPerPixel"),
            ("thumbnails", #""count":1001"#, "thumbnails.count"),
            ("thumbnails", #""count":-1"#, "thumbnails.count"),
            ("thumbnails", #""count":9223372036854775807"#, "thumbnails.count"),
            ("thumbnails", #""every":"0s""#, "thumbnails.every"),
            ("thumbnails", #""every":"999999999999s""#, "thumbnails.every"),
            ("thumbnails", #""tolerance":"999999999999s""#, "thumbnails.tolerance"),
            ("thumbnails", #""at":"999999999999s""#, "thumbnails.at"),
            ("thumbnails", #""size":"99999x""#, "thumbnails.size"),
            ("storyboard", #""tiles":0"#, "storyboard.tiles"),
            ("storyboard", #""tiles":4294967296"#, "storyboard.tiles"),
            ("storyboard", #""columns":101"#, "storyboard.columns"),
            ("storyboard", #""tileSize":"16385x""#, "storyboard.tileSize"),
        ]
        try await f.app.test(.router) { client in
            for (index, (kind, options, field)) in refused.enumerated() {
                let output = "o\(index)"
                let body = #"{"kind":"\#(kind)","input":"\#(input)","output":"\#(output)","\#(kind)":{\#(options)}}"#
                let response = try await APIKindsTests.post(client, f, body)
                let error = APIRouteTests.errorCode(response)
                #expect(response.status == .unprocessableContent, "\(options): \(response.status)")
                #expect(
                    error.code == "invalid_request" && error.field == field,
                    "\(options): \(String(buffer: response.body))"
                )
            }
            let top: [(String, String)] = [
                (#""priority":1001"#, "priority"), (#""priority":-9223372036854775808"#, "priority"),
                (#""priority":1.5"#, "priority"), (#""maxAttempts":0"#, "maxAttempts"),
                (#""maxAttempts":4294967297"#, "maxAttempts"), (#""maxAttempts":1e30"#, "maxAttempts"),
            ]
            for (extra, field) in top {
                let response = try await client.execute(
                    uri: "/v1/jobs",
                    method: .post,
                    headers: APIRouteTests.headers(f.admin),
                    body: f.body(extra: "," + extra)
                )
                let error = APIRouteTests.errorCode(response)
                #expect(response.status == .unprocessableContent, "\(extra): \(response.status)")
                #expect(error.field == field, "\(extra): \(String(buffer: response.body))")
            }
        }
        #expect(try await f.store.jobs(status: nil, limit: 10).isEmpty, "a refused job was stored")
    }

    /// A poison job (`worker_crashed`) is not run again by a plain retry; `?force=true` runs it
    /// again, and only an admin key may send it.
    @Test("retry of a poison job: 409 without force, 403 force from a submit key, 200 force from admin")
    func retryOfAPoisonJob() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let id = try await f.submitJob(client)
            // Three handles whose clocks are an hour apart: each finds the last one's lease expired.
            for hour in 0...JobStateMachine.crashLimit {
                let later = try SQLiteJobStore(path: f.directory.file("jobs.sqlite")) {
                    Date().addingTimeInterval(Double(hour) * 3600)
                }
                let worker = WorkerIdentity(name: "w\(hour)", host: "h", pid: 1, version: "t")
                _ = try await later.claim(as: worker, limit: 1, lease: .seconds(60))
            }
            let poisoned = try #require(try await f.store.job(JobID(id)))
            try #require(poisoned.status == .failed && poisoned.error?.code == .workerCrashed)
            let uri = "/v1/jobs/\(id)/retry"
            try await client.execute(uri: uri, method: .post, headers: APIRouteTests.headers(f.submit)) { response in
                #expect(response.status == .conflict)
                #expect(APIRouteTests.errorCode(response).code == "job_not_retryable")
                #expect(String(buffer: response.body).contains("force"))
            }
            try await client.execute(uri: uri + "?force=true", method: .post, headers: APIRouteTests.headers(f.submit))
            {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: uri + "?force=maybe", method: .post, headers: APIRouteTests.headers(f.admin))
            {
                #expect($0.status == .unprocessableContent)
            }
            #expect(try await f.store.job(JobID(id))?.status == .failed)
            try await client.execute(uri: uri + "?force=true", method: .post, headers: APIRouteTests.headers(f.admin)) {
                #expect($0.status == .ok)
            }
            #expect(try await f.store.job(JobID(id))?.status == .unknown)
        }
    }

    /// `{name}` only in a template's path, no dot segments, no malformed hosts or spaces.
    @Test("URL templates and malformed URLs: 422 naming the field")
    func urlTemplatesAndMalformedURLs() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let input = "in.mov"
        let refused: [(output: String, field: String)] = [
            ("https://bucket.example/x#{name}", "output"), ("https://u:{name}@bucket.example/x", "output"),
            ("https://bucket.example/x?n={name}", "output"), ("https://{name}.bucket.example/x", "output"),
            ("https://bucket.example/{name}/../x", "output"), ("https://bucket example/{name}", "output"),
            ("https://127.0.0.1%2f/{name}", "output"), ("https://localhost%00.example.com/{name}", "output"),
        ]
        try await f.app.test(.router) { client in
            for (output, field) in refused {
                let body = #"{"kind":"thumbnails","input":"\#(input)","output":"\#(output)"}"#
                let response = try await APIKindsTests.post(client, f, body)
                #expect(response.status == .unprocessableContent, "\(output)")
                #expect(APIRouteTests.errorCode(response).field == field, "\(output): \(String(buffer: response.body))")
            }
            for (field, extra) in [
                ("webhook", #","webhook":"https://hooks example.com/x""#),
                ("webhook", #","webhook":"https://localhost%00.example.com/x""#),
            ] {
                let response = try await client.execute(
                    uri: "/v1/jobs",
                    method: .post,
                    headers: APIRouteTests.headers(f.submit),
                    body: f.body(extra: extra)
                )
                #expect(response.status == .unprocessableContent, "\(extra)")
                #expect(APIRouteTests.errorCode(response).field == field, "\(extra): \(String(buffer: response.body))")
            }
            let good = #"{"kind":"thumbnails","input":"\#(input)","output":"https://bucket.example/t/{name}?sig=1"}"#
            #expect(try await APIKindsTests.post(client, f, good).status == .created)
        }
    }

    /// A listing page stops at about 1 MiB of jobs (200 jobs with 8 KB of metadata each were
    /// 9.6 MB a page), the cursor goes on from there, and each job is seen exactly once.
    @Test("a listing page is bounded in bytes; the cursor carries on; every job once")
    func listingPagesAreBoundedInBytes() async throws {
        let f = try await F { $0.rateLimit = nil }
        defer { f.directory.remove() }
        let owner = f.submitID
        let metadata = Dictionary(uniqueKeysWithValues: (0..<8).map { ("k\($0)", String(repeating: "x", count: 1000)) })
        var submitted: Set<String> = []
        for index in 0..<150 {
            let (job, _) = try await f.store.submit(
                JobRequest(input: "in.mov", output: "o\(index).mp4", preset: "low", metadata: metadata, owner: owner)
            )
            submitted.insert(job.id.rawValue)
        }
        let all = submitted
        try await f.app.test(.router) { client in
            var seen: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let uri = "/v1/jobs?limit=200" + (cursor.map { "&cursor=\($0)" } ?? "")
                let response = try await client.execute(
                    uri: uri,
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                )
                #expect(response.status == .ok)
                #expect(response.body.readableBytes <= (1 << 20) + 12 * 1024, "\(response.body.readableBytes) bytes")
                let page = APIRouteTests.json(response)
                seen += ((page["jobs"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
                cursor = page["next_cursor"] as? String
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages >= 2, "150 jobs of 8 KB fit one page")
            #expect(seen.count == all.count && Set(seen) == all, "\(seen.count) of \(all.count)")
        }
    }

    /// A response's size counts against its key's rate: a key that pulls megabyte pages is
    /// slowed (429), another key is not.
    @Test("big responses cost their key more tokens: 429 for it, not for another key")
    func bigResponsesCostTheirKey() async throws {
        let f = try await F { $0.rateLimit = RateLimit(perSecond: 5, burst: 20) }
        defer { f.directory.remove() }
        let metadata = Dictionary(uniqueKeysWithValues: (0..<8).map { ("k\($0)", String(repeating: "x", count: 1000)) })
        for index in 0..<150 {
            _ = try await f.store.submit(
                JobRequest(
                    input: "in.mov",
                    output: "o\(index).mp4",
                    preset: "low",
                    metadata: metadata,
                    owner: f.submitID
                )
            )
        }
        try await f.app.test(.router) { client in
            let first = try await client.execute(
                uri: "/v1/jobs?limit=200",
                method: .get,
                headers: APIRouteTests.headers(f.submit)
            )
            #expect(first.status == .ok && first.body.readableBytes > 500_000)
            let second = try await client.execute(
                uri: "/v1/jobs?limit=1",
                method: .get,
                headers: APIRouteTests.headers(f.submit)
            )
            #expect(second.status == .tooManyRequests, "a 1 MB page should have used the key's burst")
            #expect(Int(second.headers[.retryAfter] ?? "") ?? 0 >= 1)
            let other = try await client.execute(
                uri: "/v1/jobs?limit=1",
                method: .get,
                headers: APIRouteTests.headers(f.other)
            )
            #expect(other.status == .ok, "another key pays nothing")
            // HEAD makes the same page and pays for it the same.
            let admin = try await client.execute(
                uri: "/v1/jobs?limit=200",
                method: .head,
                headers: APIRouteTests.headers(f.admin)
            )
            #expect(admin.status == .ok && admin.body.readableBytes == 0)
            let after = try await client.execute(
                uri: "/v1/jobs?limit=1",
                method: .get,
                headers: APIRouteTests.headers(f.admin)
            )
            #expect(after.status == .tooManyRequests, "a HEAD of a 1 MB page cost one token")
        }
    }

    /// Metadata is at most 8 KB in all (it rides on every listing, webhook and event).
    @Test("metadata over 8 KB in all is 422")
    func metadataIsCapped() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let big = (0..<9).map { #""k\#($0)":"\#(String(repeating: "y", count: 1000))""# }.joined(separator: ",")
        try await f.app.test(.router) { client in
            let response = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: APIRouteTests.headers(f.submit),
                body: f.body(extra: #","metadata":{\#(big)}"#)
            )
            #expect(response.status == .unprocessableContent)
            #expect(APIRouteTests.errorCode(response).field == "metadata")
        }
    }

    /// `?wait=` takes exactly what the OpenAPI document's pattern allows.
    @Test("?wait= accepts only DIGITS[.DIGITS][ms|s|m|h]")
    func waitFollowsItsPattern() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let id = try await f.submitJob(client)
            for bad in ["1e3", "%205s", "5S", "%2B5", "5.s", ".5s", "0x10", "inf", "nan", "-1", "5sec", "5 s", "1.2.3"]
            {
                let response = try await client.execute(
                    uri: "/v1/jobs/\(id)?wait=\(bad)",
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                )
                #expect(response.status == .unprocessableContent, "wait=\(bad): \(response.status)")
            }
            for good in ["0", "1.5ms", "300ms", "0.1s", "0m", "0h"] {
                let response = try await client.execute(
                    uri: "/v1/jobs/\(id)?wait=\(good)",
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                )
                #expect(response.status == .ok, "wait=\(good): \(response.status)")
            }
        }
    }

    /// `noop` is `jobctl-bench`'s kind: refused by the API as by `jobctl submit`.
    @Test("kind noop is 422, as on the command line")
    func noopIsRefused() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let response = try await APIKindsTests.post(
                client,
                f,
                #"{"kind":"noop","input":"https://media.example/a.mov","output":"a.mp4"}"#
            )
            #expect(response.status == .unprocessableContent)
            #expect(APIRouteTests.errorCode(response).field == "kind")
        }
    }

    /// Running ahead of others and costly encoder settings are an admin's to grant: a key's
    /// priority ceiling (default 0), `placebo` inline only from admin keys.
    @Test("priority above the key's ceiling and costly inline encoder speeds are 403 for non-admin keys")
    func priorityAndCostAreGranted() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let made = APIKeys.make(name: "urgent", scope: .submit, maxPriority: 10)
        try await f.store.createAPIKey(made.key, secretHash: made.secretHash)
        let placebo =
            #"{"input":"https://media.example/a.mov","output":"p.mp4","preset":{"format":"mp4","video":{"codec":"h264","encoderPreset":"placebo"}}}"#
        try await f.app.test(.router) { client in
            func submit(_ key: String, _ body: ByteBuffer) async throws -> TestResponse {
                try await client.execute(
                    uri: "/v1/jobs",
                    method: .post,
                    headers: APIRouteTests.headers(key),
                    body: body
                )
            }
            var response = try await submit(f.submit, f.body(output: "a.mp4", extra: #","priority":1"#))
            #expect(response.status == .forbidden && APIRouteTests.errorCode(response).field == "priority")
            #expect(try await submit(f.submit, f.body(output: "b.mp4", extra: #","priority":0"#)).status == .created)
            #expect(try await submit(made.text, f.body(output: "c.mp4", extra: #","priority":10"#)).status == .created)
            response = try await submit(made.text, f.body(output: "d.mp4", extra: #","priority":11"#))
            #expect(response.status == .forbidden)
            #expect(try await submit(f.admin, f.body(output: "e.mp4", extra: #","priority":900"#)).status == .created)
            response = try await submit(f.submit, ByteBuffer(string: placebo))
            #expect(
                response.status == .forbidden && APIRouteTests.errorCode(response).field == "preset",
                "\(String(buffer: response.body))"
            )
            #expect(try await submit(f.admin, ByteBuffer(string: placebo)).status == .created)
        }
    }

    /// Local paths: combining marks cannot hide a `..` (checked as bytes), and a link in the
    /// key's directory that leads out is refused rather than followed by the server's look.
    @Test("relative paths: no .. hidden by a combining mark, no link out of the key's directory")
    func pathsStayInTheKeysDirectory() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let mine = f.directory.file(f.submitID)
        try FileManager.default.createDirectory(atPath: mine, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: mine + "/out.mov", withDestinationPath: "/etc/passwd")
        try await f.app.test(.router) { client in
            // (`..\u{301}/x.mov` is a directory named dot, dot, accent: allowed, and no parent.)
            for input in ["../\u{301}x.mov", "a/../../x.mov", "out.mov"] {
                let response = try await client.execute(
                    uri: "/v1/jobs",
                    method: .post,
                    headers: APIRouteTests.headers(f.submit),
                    body: f.body(input: input)
                )
                #expect(response.status == .unprocessableContent, "\(input)")
                #expect(
                    APIRouteTests.errorCode(response).field == "input",
                    "\(input): \(String(buffer: response.body))"
                )
            }
        }
    }
}
