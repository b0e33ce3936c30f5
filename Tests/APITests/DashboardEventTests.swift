import Dashboard
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import JobAPIServer
import Logging
import Media
import NIOCore
import Queue
import QueueSQLite
import Testing

/// The dashboard's live updates (`/ui/events`) on a real SQLite store: what a page's stream
/// tells, and what it must not (another tenant's jobs).
@Suite("Dashboard live updates")
struct DashboardEventTests {
    typealias F = APIRouteTests.Fixture
    typealias D = DashboardRouteTests

    /// The job ids of a stream's `change` events, in order.
    static func changes(_ body: ByteBuffer) -> [String] {
        String(buffer: body).components(separatedBy: "\n\n").compactMap { block in
            guard block.contains("event: change") else { return nil }
            return block.split(separator: "\n").first { $0.hasPrefix("data: ") }.map { String($0.dropFirst(6)) }
        }
    }

    /// An attribute of the page's `#live` part.
    static func live(_ attribute: String, in page: String) -> String? {
        guard let range = page.range(of: "\(attribute)=\"([^\"]*)\"", options: .regularExpression) else { return nil }
        return String(page[range].dropFirst(attribute.count + 2).dropLast())
    }

    @Test("signed out: 401, which stops the browser's EventSource (no redirect to follow)")
    func signedOut() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let response = try await client.execute(uri: "/ui/events?listing=1", method: .get)
            #expect(response.status == .unauthorized)
        }
    }

    @Test(
        "the jobs page's stream: a change to a shown job, a new submission of the key's, a token already stale at the start; nothing of another tenant's"
    )
    func jobsPageStream() async throws {
        let f = try await F { $0.maximumStream = .seconds(4) }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            let shown = try await D.submit(f, key: f.submit, input: "/in/shown.mov")
            let stale = try await D.submit(f, key: f.submit, input: "/in/stale.mov")
            let theirs = try await D.submit(f, key: f.other, input: "/in/theirs.mov")
            let page = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie]).body
            )
            let watch = try #require(Self.live("data-watch", in: page))
            let newest = try #require(Self.live("data-newest", in: page))
            #expect(newest == stale.id.rawValue)
            #expect(watch.contains("\(shown.id.rawValue)."), "\(watch)")
            #expect(!watch.contains(theirs.id.rawValue))
            // The page saw `stale` before it was claimed; another tenant's job is asked for too.
            _ = try await f.store.claim(as: APIStreamTests.worker, limit: 1, lease: .seconds(30))
            let asked =
                watch.split(separator: " ").filter { !$0.hasPrefix(stale.id.rawValue) }
                + ["\(stale.id.rawValue).stale", "\(theirs.id.rawValue).x"]
            let query = asked.joined(separator: "+")
            let stream = Task {
                try await client.execute(
                    uri: "/ui/events?watch=\(query)&listing=1&newest=\(newest)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
            }
            try await f.watching()
            // `claim` takes the oldest due job: `shown`. Then a cancel, a new job, another
            // tenant's new job.
            _ = try await f.store.cancel(shown.id)
            try await f.watched()
            let added = try await D.submit(f, key: f.submit, input: "/in/added.mov")
            try await f.watched()
            _ = try await D.submit(f, key: f.other, input: "/in/theirs-too.mov")
            _ = try await f.store.cancel(theirs.id)
            let response = try await stream.value
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "text/event-stream")
            let changes = Self.changes(response.body)
            // At the start: `stale` (its token is not the job's) and `shown` (claimed since the
            // page was made); then `shown` again (its cancel) and `added`.
            #expect(
                Set(changes.prefix(2)) == [stale.id.rawValue, shown.id.rawValue],
                "\(changes) stale=\(stale.id) shown=\(shown.id) added=\(added.id) query=\(query)"
            )
            #expect(changes.filter { $0 == shown.id.rawValue }.count == 2, "\(changes)")
            #expect(changes.contains(added.id.rawValue), "\(changes)")
            #expect(!changes.contains(theirs.id.rawValue), "\(changes)")
            #expect(Set(changes).isSubset(of: [stale.id.rawValue, shown.id.rawValue, added.id.rawValue]), "\(changes)")
        }
    }

    @Test("a job page's stream: progress by the whole percent and the end; quiet while nothing changes")
    func jobPageStream() async throws {
        let f = try await F { $0.maximumStream = .seconds(3) }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            let job = try await D.submit(f, key: f.submit, input: "/in/one.mov")
            let page = String(
                buffer: try await client.execute(
                    uri: "/ui/jobs/\(job.id)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            let watch = try #require(Self.live("data-watch", in: page))
            #expect(watch == "\(job.id.rawValue).\(LiveVersion.of(job))")
            let stream = Task {
                try await client.execute(
                    uri: "/ui/events?watch=\(watch)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
            }
            try await f.watching()
            let claimed = try #require(
                try await f.store.claim(as: APIStreamTests.worker, limit: 1, lease: .seconds(30)).first
            )
            try await f.watched()
            _ = try await f.store.heartbeat(claimed.lease, progress: 0.401, tracks: [], extendBy: .seconds(30))
            try await f.watched()
            _ = try await f.store.heartbeat(claimed.lease, progress: 0.409, tracks: [], extendBy: .seconds(30))
            try await f.watched()
            #expect(try await f.store.complete(claimed.lease, result: .null, tracks: []))
            let changes = Self.changes(try await stream.value.body)
            // Claimed, 40 %, completed: the second heartbeat stayed within the percent.
            #expect(changes == Array(repeating: job.id.rawValue, count: 3), "\(changes)")
        }
    }

    @Test("entries that are not ids are skipped, not a crash: '.', '..', '.x', an empty one, a long one")
    func oddEntries() async throws {
        let f = try await F { $0.maximumStream = .seconds(1) }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            let long = String(repeating: "a.", count: 5000)
            for watch in [".", "..", ".x", "+", ",,", "...", long, "%00.%00"] {
                let response = try await client.execute(
                    uri: "/ui/events?watch=\(watch)&listing=1",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
                #expect(response.status == .ok, "\(watch.prefix(20))")
            }
        }
    }

    @Test("a page's stream takes one of the key's watches per job it watches: past the share, 429")
    func weightedShare() async throws {
        let f = try await F {
            $0.maximumStream = .seconds(2)
            $0.maximumWatchesPerKey = 3
        }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            var jobs: [Job] = []
            for index in 0..<3 { jobs.append(try await D.submit(f, key: f.submit, input: "/in/\(index).mov")) }
            let three = jobs.map { "\($0.id.rawValue).x" }.joined(separator: "+")
            let first = Task {
                try await client.execute(
                    uri: "/ui/events?watch=\(three)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                )
            }
            try await f.watching()
            let second = try await client.execute(
                uri: "/ui/events?watch=\(jobs[0].id.rawValue).x",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(second.status == .tooManyRequests, "three jobs watched take the whole share of three")
            #expect(try await first.value.status == .ok)
        }
    }

    @Test("a read key's page streams too (looking is what it may do)")
    func readKeyStreams() async throws {
        let f = try await F { $0.maximumStream = .seconds(2) }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.read)
            let response = try await client.execute(
                uri: "/ui/events?listing=1",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(response.status == .ok)
            #expect(String(buffer: response.body).hasPrefix("retry: 2000"))
        }
    }

    @Test("many page streams of one key read its newest job once per wake-up between them, not once each")
    func newestReadsShared() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let counting = CountingStore(f.store)
        var configuration = APIConfiguration(
            store: counting,
            catalog: try PresetCatalog(customFile: nil),
            maximumStream: .seconds(2),
            rateLimit: nil,
            watchInterval: .milliseconds(200)
        )
        configuration.maximumWatchesPerKey = 1000
        let app = Application(router: APIServer.router(configuration, logger: Logger(label: "streams")))
        let streams = 60
        try await app.test(.router) { client in
            let browser = try await D.signIn(client, key: f.submit)
            let before = counting.count("newestJob")
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<streams {
                    group.addTask {
                        try await client.execute(
                            uri: "/ui/events?listing=1",
                            method: .get,
                            headers: [.cookie: browser.cookie]
                        ).status
                    }
                }
                // Another tenant's writes wake every stream to look again.
                for index in 0..<5 { _ = try await D.submit(f, key: f.other, input: "/in/w\(index).mov") }
                for try await status in group { #expect(status == .ok) }
            }
            // Each stream looks at least once (at its first update): `streams` reads or more
            // when each reads for itself; one per wake-up (ten a second here) when they share.
            let reads = counting.count("newestJob") - before
            #expect(reads < streams, "\(reads) reads of the newest job for \(streams) streams")
        }
    }
}

extension DashboardEventTests {
    /// The tests of DashboardEventTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Dashboard live updates: timing", .serialized)
    struct Timing {
        typealias F = APIRouteTests.Fixture
        typealias D = DashboardRouteTests

        @Test("a stream ends soon after its session does: signed out, or the key revoked")
        func endsWithTheSession() async throws {
            // The watch ticks every 200 ms here: a stream checks its session every 3 s.
            let f = try await F { $0.maximumStream = .seconds(60) }
            defer { f.directory.remove() }
            try await f.app.test(.router) { client in
                for ending in ["sign out", "revoke"] {
                    let browser = try await D.signIn(client, key: ending == "sign out" ? f.submit : f.other)
                    let started = ContinuousClock.now
                    let stream = Task {
                        try await client.execute(
                            uri: "/ui/events?listing=1",
                            method: .get,
                            headers: [.cookie: browser.cookie]
                        )
                    }
                    try await f.watching()
                    if ending == "sign out" {
                        var headers = D.formType
                        headers[.cookie] = browser.cookie
                        _ = try await client.execute(
                            uri: "/ui/signout",
                            method: .post,
                            headers: headers,
                            body: D.form(["csrf": browser.csrf])
                        )
                    } else {
                        #expect(
                            try await f.store.revokeAPIKey(id: String(f.other.split(separator: "_")[1]), at: Date())
                        )
                    }
                    #expect(try await stream.value.status == .ok)
                    #expect(ContinuousClock.now - started < .seconds(10), "\(ending): the stream outlived its session")
                }
            }
        }
    }
}
