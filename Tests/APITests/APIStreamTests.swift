import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import Logging
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// Event streams, webhook deliveries, rate limits and metrics, through the router test client
/// on a real SQLite file.
@Suite("HTTP API: events, deliveries, limits, metrics")
struct APIStreamTests {
    typealias F = APIRouteTests.Fixture
    static let worker = WorkerIdentity(name: "api-test-worker", host: "localhost", pid: 1, version: "test")

    /// The events of a Server-Sent Events body: (id, event, data as JSON).
    static func events(_ body: ByteBuffer) -> [(id: String?, event: String?, job: [String: Any])] {
        String(buffer: body).components(separatedBy: "\n\n").compactMap { block in
            var id: String?
            var event: String?
            var data: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            guard let data else { return nil }
            let job = (try? JSONSerialization.jsonObject(with: Data(data.utf8))) as? [String: Any] ?? [:]
            return (id, event, job)
        }
    }

    @Test(
        "events: status, progress by the percent, the final status, then the stream ends; 204 on reconnecting to an ended job"
    )
    func eventStream() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let id = try await f.submitJob(client)
            let streaming = Task {
                try await client.execute(
                    uri: "/v1/jobs/\(id)/events",
                    method: .get,
                    headers: APIRouteTests.headers(f.read)
                )
            }
            // The read key belongs to another tenant: 404 at once, no stream.
            #expect(try await streaming.value.status == .notFound)

            let stream = Task {
                try await client.execute(
                    uri: "/v1/jobs/\(id)/events",
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                )
            }
            try await f.watching()
            let claimed = try #require(try await f.store.claim(as: Self.worker, limit: 1, lease: .seconds(30)).first)
            try await f.watched()
            for progress in [0.25, 0.251, 0.5] {
                _ = try await f.store.heartbeat(claimed.lease, progress: progress, tracks: [], extendBy: .seconds(30))
                try await f.watched()
            }
            #expect(try await f.store.complete(claimed.lease, result: .null, tracks: []))
            let response = try await stream.value
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/event-stream")
            let events = Self.events(response.body)
            let summary = events.map {
                "\($0.event ?? "?") \($0.job["status"] as? String ?? "?") \($0.job["progress"] as? Double ?? -1)"
            }
            #expect(
                summary == [
                    "status unknown 0.0", "status reading 0.0", "progress reading 0.25", "progress reading 0.5",
                    "status completed 1.0",
                ],
                "\(summary)"
            )
            #expect(events.map(\.id) == ["1", "2", "3", "4", "5"])
            #expect(events.allSatisfy { $0.job["id"] as? String == id })

            // An ended job: one event, then the end; after a reconnect (Last-Event-ID), 204.
            let ended = try await client.execute(
                uri: "/v1/jobs/\(id)/events",
                method: .get,
                headers: APIRouteTests.headers(f.submit)
            )
            #expect(Self.events(ended.body).map(\.event) == ["status"])
            var again = APIRouteTests.headers(f.submit)
            again[HTTPField.Name("Last-Event-ID")!] = "5"
            try await client.execute(uri: "/v1/jobs/\(id)/events", method: .get, headers: again) {
                #expect($0.status == .noContent)
            }
        }
    }

    @Test("events: a cancelled job's stream ends with the cancel; an unknown job is 404")
    func eventStreamCancelled() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let id = try await f.submitJob(client)
            let stream = Task {
                try await client.execute(
                    uri: "/v1/jobs/\(id)/events",
                    method: .get,
                    headers: APIRouteTests.headers(f.admin)
                )
            }
            try await f.watching()
            _ = try await f.store.cancel(JobID(id))
            let events = Self.events(try await stream.value.body).map { $0.job["status"] as? String }
            // The stream opens with the job as it is: queued, when it connected before the cancel
            // (a loaded machine can take longer than the 300 ms to connect: then it opens with the
            // cancel, its end). Either way the cancel ends it.
            #expect(events == ["unknown", "cancelled"] || events == ["cancelled"], "\(events)")
            let unknown = "00000000-0000-0000-0000-000000000000"
            try await client.execute(
                uri: "/v1/jobs/\(unknown)/events",
                method: .get,
                headers: APIRouteTests.headers(f.admin)
            ) {
                #expect($0.status == .notFound)
            }
        }
    }

    @Test(
        "deliveries: the job's webhook log without credentials; redeliver (202), unknown delivery 404, another tenant 404"
    )
    func deliveries() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let created = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: APIRouteTests.headers(f.submit),
                body: f.body(extra: #","webhook":"https://user:pw@hooks.example.com/in?token=s3cret""#)
            )
            let id = try #require(APIRouteTests.json(created)["id"] as? String)
            try await client.execute(
                uri: "/v1/jobs/\(id)/deliveries",
                method: .get,
                headers: APIRouteTests.headers(f.submit)
            ) {
                #expect($0.status == .ok)
                #expect((APIRouteTests.json($0)["deliveries"] as? [Any])?.isEmpty == true)
            }
            let claimed = try #require(try await f.store.claim(as: Self.worker, limit: 1, lease: .seconds(30)).first)
            #expect(try await f.store.complete(claimed.lease, result: .null, tracks: []))

            let listed = try await client.execute(
                uri: "/v1/jobs/\(id)/deliveries",
                method: .get,
                headers: APIRouteTests.headers(f.submit)
            )
            let deliveries = try #require(APIRouteTests.json(listed)["deliveries"] as? [[String: Any]])
            #expect(deliveries.count == 1)
            let delivery = try #require(deliveries.first)
            #expect(delivery["type"] as? String == "job.completed")
            #expect(delivery["status"] as? String == "pending")
            let url = try #require(delivery["url"] as? String)
            #expect(!url.contains("s3cret") && !url.contains("pw@"), "\(url)")
            let message = try #require(delivery["id"] as? String)

            let redeliver = "/v1/jobs/\(id)/deliveries/\(message)/redeliver"
            try await client.execute(uri: redeliver, method: .post, headers: APIRouteTests.headers(f.submit)) {
                #expect($0.status == .accepted)
                #expect(APIRouteTests.json($0)["id"] as? String == message)
            }
            try await client.execute(uri: redeliver, method: .post, headers: APIRouteTests.headers(f.read)) {
                #expect($0.status == .forbidden, "reading is not redelivering")
            }
            try await client.execute(uri: redeliver, method: .post, headers: APIRouteTests.headers(f.other)) {
                #expect($0.status == .notFound, "another tenant's job")
            }
            try await client.execute(
                uri: "/v1/jobs/\(id)/deliveries/msg_nope/redeliver",
                method: .post,
                headers: APIRouteTests.headers(f.submit)
            ) {
                #expect($0.status == .notFound)
                #expect(APIRouteTests.errorCode($0).code == "delivery_not_found")
            }
            // Another job's delivery id through this job: not found either.
            let second = try await f.submitJob(client, output: "second.mp4")
            try await client.execute(
                uri: "/v1/jobs/\(second)/deliveries/\(message)/redeliver",
                method: .post,
                headers: APIRouteTests.headers(f.submit)
            ) {
                #expect($0.status == .notFound)
            }
        }
    }

    @Test("a key holds at most its share of long polls and streams (429 too_many_watches); others are not affected")
    func watchesPerKey() async throws {
        let f = try await F { $0.maximumWatchesPerKey = 2 }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let id = try await f.submitJob(client)
            let held = (0..<2).map { index in
                Task {
                    let path = index == 0 ? "/v1/jobs/\(id)?wait=2s" : "/v1/jobs/\(id)/events"
                    return try await client.execute(uri: path, method: .get, headers: APIRouteTests.headers(f.submit))
                }
            }
            try await f.watching(2)
            for path in ["/v1/jobs/\(id)?wait=2s", "/v1/jobs/\(id)/events"] {
                try await client.execute(uri: path, method: .get, headers: APIRouteTests.headers(f.submit)) {
                    #expect($0.status == .tooManyRequests, "\(path)")
                    #expect(APIRouteTests.errorCode($0).code == "too_many_watches")
                    #expect($0.headers[.retryAfter] == "5")
                }
            }
            // An admin key has its own share; a plain GET is not a watch.
            try await client.execute(
                uri: "/v1/jobs/\(id)?wait=300ms",
                method: .get,
                headers: APIRouteTests.headers(f.admin)
            ) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/v1/jobs/\(id)", method: .get, headers: APIRouteTests.headers(f.submit)) {
                #expect($0.status == .ok)
            }
            _ = try await f.store.cancel(JobID(id))
            for task in held { #expect(try await task.value.status == .ok) }
            // Ended watches give their places back.
            try await client.execute(
                uri: "/v1/jobs/\(id)?wait=1s",
                method: .get,
                headers: APIRouteTests.headers(f.submit)
            ) {
                #expect($0.status == .ok)
            }
        }
    }

    @Test("/metrics: admin only (401, 403), the request counters by route; --public-metrics opens it")
    func metrics() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            _ = try await f.submitJob(client)
            try await client.execute(uri: "/metrics", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/metrics", method: .get, headers: APIRouteTests.headers(f.read)) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/metrics", method: .get, headers: APIRouteTests.headers(f.admin)) {
                #expect($0.status == .ok)
                let text = String(buffer: $0.body)
                #expect(
                    text.contains(#"jobctl_http_requests_total{route="/v1/jobs",method="POST",status="201"} 1"#),
                    "\(text)"
                )
                #expect(text.contains("jobctl_http_request_duration_seconds"))
            }
        }
        let open = try await F { $0.publicMetrics = true }
        defer { open.directory.remove() }
        try await open.app.test(.router) { client in
            try await client.execute(uri: "/metrics", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/v1/jobs", method: .get) { #expect($0.status == .unauthorized) }
        }
    }
}

extension APIStreamTests {
    /// The tests of APIStreamTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("HTTP API: events, deliveries, limits, metrics: timing", .serialized)
    struct Timing {
        typealias F = APIRouteTests.Fixture

        @Test("a stream ends after the server's maximum (the client reconnects); a huge ?wait= is 422, not a crash")
        func streamLifetimeAndHugeWaits() async throws {
            let f = try await F { $0.maximumStream = .milliseconds(700) }
            defer { f.directory.remove() }
            try await f.app.test(.router) { client in
                let id = try await f.submitJob(client)
                let started = ContinuousClock.now
                let response = try await client.execute(
                    uri: "/v1/jobs/\(id)/events",
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                )
                #expect(response.status == .ok)
                #expect(APIStreamTests.events(response.body).map(\.event) == ["status"])
                #expect(ContinuousClock.now - started < .seconds(5))
                // Found by schemathesis: this once overflowed and took the server down.
                try await client.execute(
                    uri: "/v1/jobs/\(id)?wait=4084410497952903323145ms",
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                ) {
                    #expect($0.status == .unprocessableContent)
                    #expect(APIRouteTests.errorCode($0).field == "wait")
                }
                // Also found by schemathesis: a duration that rounds to 0 µs was stored, and trapped
                // the worker that claimed it.
                for range in [
                    #"{"start":1.5,"duration":5e-324}"#, #"{"start":1e300}"#, #"{"start":0,"duration":1e-7}"#,
                ] {
                    let response = try await client.execute(
                        uri: "/v1/jobs",
                        method: .post,
                        headers: APIRouteTests.headers(f.submit),
                        body: f.body(extra: #","range":\#(range)"#)
                    )
                    #expect(response.status == .unprocessableContent, "\(range)")
                    #expect(APIRouteTests.errorCode(response) == ("range_out_of_bounds", "range"), "\(range)")
                }
                // A method a path does not have: 405 with Allow, in the API's error shape.
                try await client.execute(
                    uri: "/v1/jobs/\(id)",
                    method: .delete,
                    headers: APIRouteTests.headers(f.submit)
                ) {
                    #expect($0.status == .methodNotAllowed)
                    #expect($0.headers[.allow] == "GET, HEAD")
                    #expect(APIRouteTests.errorCode($0).code == "method_not_allowed")
                }
            }
        }

        @Test("a key over its rate gets 429 with Retry-After; so does an address that keeps sending bad keys")
        func rateLimits() async throws {
            // A token every 5 s: the four requests below must come within 5 s (a loaded machine
            // once took longer than 1 s, and once longer than 2 s, and the fourth was let through).
            let f = try await F { $0.rateLimit = RateLimit(perSecond: 0.2, burst: 3) }
            defer { f.directory.remove() }
            try await f.app.test(.router) { client in
                for _ in 0..<3 {
                    try await client.execute(uri: "/v1/jobs", method: .get, headers: APIRouteTests.headers(f.read)) {
                        #expect($0.status == .ok)
                    }
                }
                try await client.execute(uri: "/v1/jobs", method: .get, headers: APIRouteTests.headers(f.read)) {
                    #expect($0.status == .tooManyRequests)
                    #expect(
                        (1...5).contains(Int($0.headers[.retryAfter] ?? "") ?? 0),
                        "whole seconds to the next token"
                    )
                    #expect(APIRouteTests.errorCode($0).code == "rate_limited")
                }
                // Another key has its own bucket.
                try await client.execute(uri: "/v1/jobs", method: .get, headers: APIRouteTests.headers(f.admin)) {
                    #expect($0.status == .ok)
                }
                // A refused request takes no token: ask until the bucket's next one (5 s) lets it in.
                let refilled = try await eventually(within: .seconds(20)) {
                    try await client.execute(uri: "/v1/jobs", method: .get, headers: APIRouteTests.headers(f.read))
                        .status == .ok
                }
                #expect(refilled, "a token came back after five seconds")
                // Bad keys of ids that do not exist: 20 refusals (the address's burst), then 429. The
                // bucket refills at 10 a second, so on a loaded machine a few more 401s may come first:
                // send until the first 429 (a test that counted exactly 22 failed under load).
                var statuses: [Int] = []
                while statuses.count < 200, statuses.last != 429 {
                    let response = try await client.execute(
                        uri: "/v1/jobs",
                        method: .get,
                        headers: APIRouteTests.headers(AuthFailureTests.unknownKey())
                    )
                    statuses.append(response.status.code)
                }
                #expect(statuses.count > 20 && statuses.prefix(20).allSatisfy { $0 == 401 }, "\(statuses)")
                #expect(statuses.last == 429, "\(statuses)")
                #expect(statuses.dropLast().allSatisfy { $0 == 401 }, "\(statuses)")
                try await client.execute(uri: "/healthz", method: .get) {
                    #expect($0.status == .ok, "open routes stay open")
                }
            }
        }
    }
}
