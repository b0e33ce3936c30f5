import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import JobAPIServer
import JobKinds
import Logging
import Media
import MediaTestKit
import Prometheus
import Queue
import QueueSQLite
import Synchronization
import Testing

/// The routes through Hummingbird's router test client, on a real SQLite file.
@Suite("HTTP API routes")
struct APIRouteTests {
    /// A fresh database with three keys, and the application in front of it.
    struct Fixture {
        let directory: TemporaryDirectory
        let store: SQLiteJobStore
        let submit: String
        let other: String
        let read: String
        let admin: String
        let app: Application<RouterResponder<APIRequestContext>>
        /// The server's one watch (long polls, event streams, live pages).
        let watch: JobWatch

        let metrics = PrometheusCollectorRegistry()
        /// The submit key's id: its directory under the roots.
        var submitID: String { String(submit.split(separator: "_")[1]) }

        init(
            maximumWait: Duration = .seconds(10),
            configure: (inout APIConfiguration) -> Void = { _ in }
        ) async throws {
            directory = try TemporaryDirectory("api")
            store = try SQLiteJobStore(path: directory.file("jobs.sqlite"))
            let store = self.store
            submit = try await Self.key(.submit, "ingest", store)
            other = try await Self.key(.submit, "another tenant", store)
            read = try await Self.key(.read, "dashboard", store)
            admin = try await Self.key(.admin, "ops", store)
            var configuration = APIConfiguration(
                store: store,
                catalog: try PresetCatalog(customFile: nil),
                paths: PathConfinement(inputRoot: directory.path, outputRoot: directory.path),
                maximumWait: maximumWait,
                rateLimit: nil,
                metrics: metrics,
                watchInterval: .milliseconds(200)
            )
            configure(&configuration)
            let logger = Logger(label: "api-test")
            watch = APIRoutes.watch(configuration, logger: logger)
            app = Application(router: APIServer.router(configuration, watch: watch, logger: logger))
        }

        /// Waits until the server holds `count` watchers (long polls, streams, live pages): a
        /// request that waits is in the server, not only sent.
        func watching(_ count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let watch = self.watch
            let held = await eventually(within: .seconds(30)) { watch.count >= count }
            try #require(held, "\(watch.count) watchers, not \(count)", sourceLocation: sourceLocation)
        }

        /// Waits until the watch has read the jobs since now: what changed before this call has
        /// reached every watcher (two wake-ups, as one may have begun before the change).
        func watched(sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let watch = self.watch
            let target = watch.wakeUps + 2
            let read = await eventually(within: .seconds(30)) { watch.wakeUps >= target }
            try #require(read, "the watch did not wake up", sourceLocation: sourceLocation)
        }

        static func key(_ scope: APIScope, _ name: String, _ store: SQLiteJobStore) async throws -> String {
            let made = APIKeys.make(name: name, scope: scope)
            try await store.createAPIKey(made.key, secretHash: made.secretHash)
            return made.text
        }

        /// Submits a job with the `submit` key; its id.
        func submitJob(_ client: some TestClientProtocol, output: String? = nil) async throws -> String {
            let created = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: APIRouteTests.headers(submit),
                body: body(output: output)
            )
            return try #require(APIRouteTests.json(created)["id"] as? String)
        }

        func body(input: String? = nil, output: String? = nil, extra: String = "") -> ByteBuffer {
            let input = input ?? "in.mov"
            let output = output ?? "out.mp4"
            return ByteBuffer(string: #"{"input":"\#(input)","output":"\#(output)","preset":"low"\#(extra)}"#)
        }
    }

    static func headers(_ key: String?, idempotency: String? = nil) -> HTTPFields {
        var fields = HTTPFields()
        if let key { fields[.authorization] = "Bearer \(key)" }
        if let idempotency { fields[HTTPField.Name("Idempotency-Key")!] = idempotency }
        fields[.contentType] = "application/json"
        return fields
    }

    /// The body as a JSON object (empty when it is not one: the expectations then fail).
    static func json(_ response: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: response.body))) as? [String: Any] ?? [:]
    }

    /// Where a relative link or redirect (`location`) sent from `path` leads: the path and query
    /// a browser asks for next.
    static func resolved(_ location: String?, from path: String) -> String? {
        // `URLComponents`, not `URL.path`, which drops a trailing slash.
        guard let location, let base = URL(string: "http://dashboard.test" + path),
            let url = URL(string: location, relativeTo: base),
            let parts = URLComponents(url: url, resolvingAgainstBaseURL: true)
        else { return nil }
        return parts.percentEncodedPath + (parts.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    static func errorCode(_ response: TestResponse) -> (code: String?, field: String?) {
        let error = json(response)["error"] as? [String: Any]
        return (error?["code"] as? String, error?["field"] as? String)
    }

    @Test("no key, a malformed key, a wrong secret and a revoked key are 401; /healthz needs none")
    func authentication() async throws {
        let f = try await Fixture { $0.keyCacheLifetime = .milliseconds(300) }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            for key in [nil, "nonsense", "jck_000000000000_" + String(repeating: "a", count: 43)] {
                try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(key)) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.wwwAuthenticate] == "Bearer")
                    #expect(Self.errorCode(response).code == "unauthorized")
                }
            }
            // The right id with another secret.
            let forged = String(f.submit.dropLast(4)) + "AAAA"
            try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(forged)) {
                #expect($0.status == .unauthorized)
            }
            try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(f.submit)) {
                #expect($0.status == .ok)
            }
            // An unknown route, and a body too large, in the API's error shape.
            try await client.execute(uri: "/v1/nothing", method: .get, headers: Self.headers(f.submit)) {
                #expect($0.status == .notFound)
                #expect(Self.errorCode($0).code == "not_found")
            }
            // The key's row is cached now: a wrong secret for its id is still refused.
            try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(forged)) {
                #expect($0.status == .unauthorized)
            }
            // A revocation takes effect once the cached row is older than its lifetime (300 ms here).
            let id = try #require(APIKeys.parse(Substring(f.submit))?.id)
            #expect(try await f.store.revokeAPIKey(id: id, at: Date()))
            let refused = try await eventually(within: .seconds(10)) {
                try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(f.submit)).status
                    == .unauthorized
            }
            #expect(refused, "the revoked key was still let in")
        }
    }

    @Test("scopes and tenants: read cannot submit; a key sees only its own jobs; admin sees all")
    func scopesAndTenants() async throws {
        let f = try await Fixture()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            try await client.execute(uri: "/v1/jobs", method: .post, headers: Self.headers(f.read), body: f.body()) {
                #expect($0.status == .forbidden)
            }
            let created = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: Self.headers(f.submit),
                body: f.body()
            )
            #expect(created.status == .created)
            let job = Self.json(created)
            let id = try #require(job["id"] as? String)
            #expect(job["owner"] as? String == APIKeys.parse(Substring(f.submit))?.id)
            #expect(job["status"] as? String == "unknown")

            for (key, visible) in [(f.submit, true), (f.other, false), (f.read, false), (f.admin, true)] {
                try await client.execute(uri: "/v1/jobs/\(id)", method: .get, headers: Self.headers(key)) {
                    #expect($0.status == (visible ? .ok : .notFound))
                }
                let listed = try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(key))
                let jobs = try #require(Self.json(listed)["jobs"] as? [[String: Any]])
                #expect(jobs.count == (visible ? 1 : 0))
            }
            // Another tenant cannot cancel it either.
            try await client.execute(uri: "/v1/jobs/\(id)/cancel", method: .post, headers: Self.headers(f.other)) {
                #expect($0.status == .notFound)
            }
            try await client.execute(uri: "/v1/jobs/not-an-id", method: .get, headers: Self.headers(f.admin)) {
                #expect($0.status == .notFound)
            }
        }
    }

    @Test("bad requests name their field: missing output, paths outside the root, bad range, not JSON, too big")
    func validation() async throws {
        let f = try await Fixture()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            func post(_ body: ByteBuffer) async throws -> TestResponse {
                try await client.execute(uri: "/v1/jobs", method: .post, headers: Self.headers(f.submit), body: body)
            }
            var response = try await post(
                ByteBuffer(string: #"{"input":"https://media.example/in.mov","preset":"low"}"#)
            )
            #expect(response.status == .unprocessableContent)
            #expect(Self.errorCode(response).field == "output")
            response = try await post(f.body(input: "/etc/shadow"))
            #expect(Self.errorCode(response) == ("input_unreadable", "input"))
            response = try await post(f.body(input: "../../etc/shadow"))
            #expect(Self.errorCode(response) == ("input_unreadable", "input"))
            response = try await post(f.body(output: "/dev/null"))
            #expect(Self.errorCode(response) == ("output_forbidden", "output"))
            response = try await post(f.body(input: "http://169.254.169.254/latest/meta-data"))
            #expect(Self.errorCode(response) == ("input_unreadable", "input"))
            response = try await post(f.body(extra: #","range":"9s-3s""#))
            #expect(Self.errorCode(response) == ("range_out_of_bounds", "range"))
            response = try await post(f.body(extra: #","range":{"start":-1}"#))
            #expect(Self.errorCode(response) == ("range_out_of_bounds", "range"))
            response = try await post(f.body(extra: #","maxAttempts":0"#))
            #expect(Self.errorCode(response).field == "maxAttempts")
            response = try await post(f.body(extra: #","webhook":"http://127.0.0.1:9/hook""#))
            #expect(Self.errorCode(response) == ("webhook_forbidden", "webhook"))
            response = try await post(ByteBuffer(string: #"{"input":"#))
            #expect(response.status == .badRequest)
            response = try await post(ByteBuffer(string: #"{"input":5,"output":"x","preset":"low"}"#))
            #expect(Self.errorCode(response).field == "input")
            response = try await post(f.body(extra: #","preset2":""# + String(repeating: "x", count: 70_000) + #"""#))
            #expect(response.status == .contentTooLarge)
            #expect(Self.errorCode(response).code == "invalid_request")
            response = try await post(
                ByteBuffer(
                    string:
                        #"{"input":"in.mov","output":"o.mp4","preset":"nope"}"#
                )
            )
            #expect(Self.errorCode(response) == ("preset_unknown", "preset"))
            #expect(try await f.store.jobs(status: nil, limit: 10).isEmpty, "a refused request queued a job")
        }
    }

    @Test("Idempotency-Key: a replay returns the job (200), another body is 422, 8 at once make one job")
    func idempotency() async throws {
        let f = try await Fixture()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let headers = Self.headers(f.submit, idempotency: "order-1234")
            let statuses = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String?).self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        let response = try await client.execute(
                            uri: "/v1/jobs",
                            method: .post,
                            headers: headers,
                            body: f.body()
                        )
                        return (response.status, Self.json(response)["id"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0.0 == .created }.count == 1)
            #expect(statuses.filter { $0.0 == .ok }.count == 7)
            #expect(Set(statuses.map(\.1)).count == 1, "the replays returned another job")
            #expect(try await f.store.jobs(status: nil, limit: 10).count == 1)

            var response = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: headers,
                body: f.body(extra: #","priority":-5"#)
            )
            #expect(response.status == .unprocessableContent)
            #expect(Self.errorCode(response) == ("idempotency_key_reused", "Idempotency-Key"))
            // The same key from another tenant is another job: keys are per API key.
            response = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: Self.headers(f.other, idempotency: "order-1234"),
                body: f.body()
            )
            #expect(response.status == .created)
            response = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: Self.headers(f.submit, idempotency: String(repeating: "k", count: 256)),
                body: f.body()
            )
            #expect(response.status == .badRequest)
        }
    }

    @Test("cursor pagination over 1,000 jobs, 37 a page, while jobs keep arriving: each job exactly once")
    func pagination() async throws {
        let f = try await Fixture()
        defer { f.directory.remove() }
        let owner = try #require(APIKeys.parse(Substring(f.submit))?.id)
        let store = f.store
        @Sendable func add(_ name: String) async throws -> String {
            let request = JobRequest(
                input: f.directory.file("in.mov"),
                output: f.directory.file("\(name).mp4"),
                preset: "low",
                owner: owner
            )
            return try await store.submit(request).job.id.rawValue
        }
        // Eight submitters at once: the store's group commit keeps this to a second or two.
        let submitted = try await withThrowingTaskGroup(of: [String].self) { group in
            for lane in 0..<8 {
                group.addTask {
                    var ids: [String] = []
                    for index in 0..<125 { ids.append(try await add("out-\(lane)-\(index)")) }
                    return ids
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.formUnion($1) }
        }
        #expect(submitted.count == 1000)
        try await f.app.test(.router) { client in
            // From the first page on, jobs keep arriving: newer than any cursor, never in a later page.
            var arriving: Task<Int, any Error>?
            var seen: [String] = []
            var cursor: String?
            for _ in 0..<40 {
                defer {
                    if arriving == nil {
                        arriving = Task {
                            var index = 0
                            while !Task.isCancelled {
                                _ = try await add("late-\(index)")
                                index += 1
                                try await Task.sleep(for: .milliseconds(5))
                            }
                            return index
                        }
                    }
                }
                let uri = "/v1/jobs?limit=37" + (cursor.map { "&cursor=\($0)" } ?? "")
                let response = try await client.execute(uri: uri, method: .get, headers: Self.headers(f.submit))
                #expect(response.status == .ok)
                let body = Self.json(response)
                let jobs = (body["jobs"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
                seen += jobs
                cursor = body["next_cursor"] as? String
                if cursor == nil { break }
            }
            arriving?.cancel()
            let late = try? await arriving?.value
            #expect(seen.count == 1000 && Set(seen) == submitted, "\(seen.count) listed, \(Set(seen).count) distinct")
            #expect(late ?? 1 > 0, "jobs were added during the listing")
            try await client.execute(uri: "/v1/jobs?cursor=bm9wZQ", method: .get, headers: Self.headers(f.submit)) {
                #expect(Self.errorCode($0).field == "cursor")
            }
            try await client.execute(uri: "/v1/jobs?status=done", method: .get, headers: Self.headers(f.submit)) {
                #expect(Self.errorCode($0).field == "status")
            }
        }
    }

    /// Threads of this process whose name starts with `prefix` (Linux: /proc/self/task).
    static func threads(named prefix: String) -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            ((try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? "").hasPrefix(prefix)
        }.count
    }

    @Test("200 long polls share one change subscription (one inotify watcher, not 200) and all see the job end")
    func longPollsShareOneSubscription() async throws {
        let f = try await Fixture()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let id = try await f.submitJob(client)
            let before = Self.threads(named: "jobctl.sqlite.w")
            let answers = Task {
                try await withThrowingTaskGroup(of: String?.self) { group in
                    for _ in 0..<200 {
                        group.addTask {
                            let response = try await client.execute(
                                uri: "/v1/jobs/\(id)?wait=8s",
                                method: .get,
                                headers: Self.headers(f.submit)
                            )
                            return Self.json(response)["status"] as? String
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
            try await f.watching(200)
            let during = Self.threads(named: "jobctl.sqlite.w")
            // Other tests of the suite may watch their own databases meanwhile: a few, not 200.
            #expect(during - before <= 5, "\(during - before) watcher threads for 200 long polls")
            _ = try await f.store.cancel(JobID(id))
            let statuses = try await answers.value
            #expect(statuses.count == 200 && statuses.allSatisfy { $0 == "cancelled" })
        }
    }

    @Test("/openapi.json lists exactly the router's routes, and real responses carry exactly its schemas' fields")
    func openAPIDocument() async throws {
        let f = try await Fixture()
        defer { f.directory.remove() }
        let router = APIServer.router(
            APIConfiguration(store: f.store, catalog: try PresetCatalog(customFile: nil), metrics: f.metrics),
            logger: Logger(label: "api-test")
        )
        // The dashboard's pages (`/ui`) are HTML for people, not part of the JSON API.
        let routed = Set(
            router.routes.filter { !"\($0.path)".hasPrefix("/ui") }.map { "\($0.method.rawValue) \($0.path)" }
        )
        try await f.app.test(.router) { client in
            let response = try await client.execute(uri: "/openapi.json", method: .get)
            #expect(response.status == .ok)
            let document = Self.json(response)
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let documented = Set(paths.flatMap { path, methods in methods.keys.map { "\($0.uppercased()) \(path)" } })
            #expect(
                documented == routed,
                "only documented: \(documented.subtracting(routed)); only routed: \(routed.subtracting(documented))"
            )

            let schemas = try #require(
                (document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]]
            )
            func check(_ object: [String: Any], against name: String) {
                let schema = schemas[name] ?? [:]
                let required = Set(schema["required"] as? [String] ?? [])
                let properties = Set((schema["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
                #expect(required.isSubset(of: object.keys), "\(name) lacks \(required.subtracting(object.keys))")
                #expect(
                    Set(object.keys).isSubset(of: properties),
                    "\(name) has undocumented \(Set(object.keys).subtracting(properties))"
                )
            }
            let created = try await client.execute(
                uri: "/v1/jobs",
                method: .post,
                headers: Self.headers(f.submit, idempotency: "doc-1"),
                body: f.body()
            )
            let job = Self.json(created)
            check(job, against: "Job")
            #expect(job["idempotencyKey"] as? String == "doc-1", "the tenant prefix is shown")
            let page = try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(f.submit))
            check(Self.json(page), against: "JobPage")
            let refused = try await client.execute(uri: "/v1/jobs", method: .get, headers: Self.headers(nil))
            check(Self.json(refused), against: "Error")
            let detail = Self.json(refused)["error"] as? [String: Any] ?? [:]
            #expect(Set(detail.keys) == ["code", "message", "field"])
        }
    }
}

extension APIRouteTests {
    /// The tests of APIRouteTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("HTTP API routes: timing", .serialized)
    struct Timing {
        @Test("cancel (202, then 409 once ended), retry, and ?wait= answered as soon as the job ends")
        func cancelRetryWait() async throws {
            let f = try await Fixture()
            defer { f.directory.remove() }
            try await f.app.test(.router) { client in
                let id = try await f.submitJob(client)
                // A long poll by a key that cannot see the job: 404 at once, never held.
                let started = ContinuousClock.now
                let waiting = Task {
                    try await client.execute(
                        uri: "/v1/jobs/\(id)?wait=8s",
                        method: .get,
                        headers: APIRouteTests.headers(f.read)
                    )
                }
                try await client.execute(
                    uri: "/v1/jobs/\(id)/cancel",
                    method: .post,
                    headers: APIRouteTests.headers(f.submit)
                ) {
                    #expect($0.status == .accepted)
                }
                _ = waiting  // (the read key cannot see it: 404 at once; see the admin wait below)
                let waited = try await waiting.value
                #expect(waited.status == .notFound)
                try await client.execute(
                    uri: "/v1/jobs/\(id)/cancel",
                    method: .post,
                    headers: APIRouteTests.headers(f.submit)
                ) {
                    #expect($0.status == .conflict)
                    #expect(APIRouteTests.errorCode($0).code == "job_ended")
                }
                try await client.execute(
                    uri: "/v1/jobs/\(id)/retry",
                    method: .post,
                    headers: APIRouteTests.headers(f.submit)
                ) {
                    #expect($0.status == .ok)
                    #expect(APIRouteTests.json($0)["status"] as? String == "unknown")
                }
                let adminWait = Task {
                    try await client.execute(
                        uri: "/v1/jobs/\(id)?wait=8s",
                        method: .get,
                        headers: APIRouteTests.headers(f.admin)
                    )
                }
                try await f.watching()
                _ = try await f.store.cancel(JobID(id))
                let answer = try await adminWait.value
                #expect(APIRouteTests.json(answer)["status"] as? String == "cancelled")
                #expect(ContinuousClock.now - started < .seconds(6), "the long poll waited past the job's end")
                // A wait on a job that does not end answers with the job as it is when the wait is over.
                let second = try await client.execute(
                    uri: "/v1/jobs",
                    method: .post,
                    headers: APIRouteTests.headers(f.submit),
                    body: f.body(output: "b.mp4")
                )
                let other = try #require(APIRouteTests.json(second)["id"] as? String)
                let before = ContinuousClock.now
                try await client.execute(
                    uri: "/v1/jobs/\(other)?wait=1s",
                    method: .get,
                    headers: APIRouteTests.headers(f.submit)
                ) {
                    #expect(APIRouteTests.json($0)["status"] as? String == "unknown")
                }
                #expect(ContinuousClock.now - before >= .milliseconds(900))
            }
        }
    }
}
