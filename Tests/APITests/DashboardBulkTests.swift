import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import NIOCore
import Queue
import QueueSQLite
import Testing

/// Bulk cancel and retry: confirmed first, the key's own jobs only, each audited.
@Suite("Dashboard bulk actions")
struct DashboardBulkTests {
    typealias F = APIRouteTests.Fixture
    typealias B = DashboardRouteTests

    static func post(
        _ client: some TestClientProtocol,
        _ browser: B.Browser,
        _ fields: [(String, String)]
    ) async throws -> TestResponse {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
        var headers = B.formType
        headers[.cookie] = browser.cookie
        return try await client.execute(
            uri: "/ui/bulk",
            method: .post,
            headers: headers,
            body: ByteBuffer(string: body)
        )
    }

    @Test("a selection: confirmed with its count, another tenant's job left out, each job audited")
    func selection() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        var submitted: [Job] = []
        for index in 0..<3 { submitted.append(try await B.submit(f, key: f.submit, input: "/in/\(index).mov")) }
        let mine = submitted
        let theirs = try await B.submit(f, key: f.other, input: "/in/theirs.mov")
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            let page = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie]).body
            )
            #expect(page.contains(#"<input type="checkbox" name="id" value="\#(mine[0].id.rawValue)" form="bulk""#))
            let picked = (mine.map(\.id) + [theirs.id]).map { ("id", $0.rawValue) }
            let base = [("csrf", browser.csrf), ("action", "cancel"), ("target", "selected"), ("q", "")]
            let confirm = try await Self.post(client, browser, base + picked)
            #expect(confirm.status == .ok)
            let text = String(buffer: confirm.body)
            #expect(text.contains("<h1>Cancel 3 jobs?</h1>") && !text.contains(theirs.id.rawValue))
            #expect(text.contains(">Yes, cancel 3 jobs</button>"))
            #expect(try await f.store.job(mine[0].id)?.status == .unknown, "nothing happens before the confirmation")
            let done = try await Self.post(client, browser, base + picked + [("confirm", "yes")])
            #expect(done.status == .seeOther)
            #expect(done.headers[.location] == "./?q=&done=bulk-cancel&count=3&skipped=0")
            for job in mine { #expect(try await f.store.job(job.id)?.status == .cancelled) }
            #expect(try await f.store.job(theirs.id)?.status == .unknown)
            #expect(try await f.store.auditRecords(job: mine[1].id, limit: 5).map(\.action) == ["bulk cancel"])
            let after = try await client.execute(
                uri: "/ui/?q=&done=bulk-cancel&count=3&skipped=0",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(String(buffer: after.body).contains("Cancelled: 3 jobs."))
            // Without the token, or with a read key: refused, nothing done.
            let forged = try await Self.post(client, browser, Array(base.dropFirst()) + picked + [("confirm", "yes")])
            #expect(forged.status == .forbidden)
            let reader = try await B.signIn(client, key: f.read)
            let readPage = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: reader.cookie]).body
            )
            #expect(!readPage.contains(#"type="checkbox""#) && !readPage.contains(#"id="bulk""#))
            let refused = try await Self.post(
                client,
                reader,
                [("csrf", reader.csrf), ("action", "retry"), ("target", "selected")] + picked + [("confirm", "yes")]
            )
            #expect(refused.status == .forbidden)
            #expect(try await f.store.job(mine[0].id)?.status == .cancelled)
        }
    }

    @Test("every job matching the filter: only those, the key's own; what cannot be done is counted")
    func matching() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let hls = [
            try await B.submit(f, key: f.submit, input: "/in/a.mov", kind: "hls"),
            try await B.submit(f, key: f.submit, input: "/in/b.mov", kind: "hls"),
        ]
        let export = try await B.submit(f, key: f.submit, input: "/in/c.mov")
        let theirs = try await B.submit(f, key: f.other, input: "/in/d.mov", kind: "hls")
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            let base = [("csrf", browser.csrf), ("action", "cancel"), ("target", "matching"), ("q", "kind:hls")]
            let confirm = String(buffer: try await Self.post(client, browser, base).body)
            #expect(confirm.contains("<h1>Cancel 2 jobs?</h1>") && confirm.contains("<code>kind:hls</code>"))
            let done = try await Self.post(client, browser, base + [("confirm", "yes")])
            #expect(done.headers[.location] == "./?q=kind:hls&done=bulk-cancel&count=2&skipped=0")
            for job in hls { #expect(try await f.store.job(job.id)?.status == .cancelled) }
            #expect(try await f.store.job(export.id)?.status == .unknown)
            #expect(try await f.store.job(theirs.id)?.status == .unknown, "another tenant's matching job")
            // Retry everything of this key: the two cancelled go back, the queued one cannot.
            let retry = [
                ("csrf", browser.csrf), ("action", "retry"), ("target", "matching"), ("q", ""), ("confirm", "yes"),
            ]
            let retried = try await Self.post(client, browser, retry)
            #expect(retried.headers[.location] == "./?q=&done=bulk-retry&count=2&skipped=1")
            for job in hls { #expect(try await f.store.job(job.id)?.status == .unknown) }
            let bad = try await Self.post(
                client,
                browser,
                [("csrf", browser.csrf), ("action", "delete"), ("target", "matching")]
            )
            #expect(bad.status == .badRequest)
        }
    }
}

/// A job's webhook deliveries on its page, redelivered from it.
@Suite("Dashboard deliveries")
struct DashboardDeliveryTests {
    typealias F = APIRouteTests.Fixture
    typealias B = DashboardRouteTests

    @Test("the deliveries are listed without the URL's secrets, and one is redelivered and audited")
    func deliveries() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let job = try await DashboardFileTests.completed(
            f,
            key: f.submit,
            output: "o.mp4",
            result: .object([:]),
            webhook: "https://user:secret@hooks.example/done?token=abc"
        )
        let delivery = try #require(try await f.store.deliveries(job: job.id, limit: 10).first)
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.submit)
            let page = String(
                buffer: try await client.execute(
                    uri: "/ui/jobs/\(job.id.rawValue)",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            #expect(page.contains("Webhook deliveries") && page.contains("job.completed"))
            #expect(
                page.contains("https://hooks.example/done") && !page.contains("secret") && !page.contains("token=abc")
            )
            let action = "/ui/jobs/\(job.id.rawValue)/deliveries/\(delivery.id)/redeliver"
            #expect(page.contains(#"action="../jobs/\#(job.id.rawValue)/deliveries/\#(delivery.id)/redeliver""#))
            var headers = B.formType
            headers[.cookie] = browser.cookie
            let forged = try await client.execute(uri: action, method: .post, headers: headers, body: B.form([:]))
            #expect(forged.status == .forbidden)
            let done = try await client.execute(
                uri: action,
                method: .post,
                headers: headers,
                body: B.form(["csrf": browser.csrf])
            )
            #expect(done.status == .seeOther)
            #expect(
                APIRouteTests.resolved(done.headers[.location], from: action)
                    == "/ui/jobs/\(job.id.rawValue)?done=redelivered"
            )
            #expect(try await f.store.auditRecords(job: job.id, limit: 5).map(\.action) == ["redeliver"])
            // Another tenant: not found, nothing recorded.
            let stranger = try await B.signIn(client, key: f.other)
            var theirs = B.formType
            theirs[.cookie] = stranger.cookie
            let refused = try await client.execute(
                uri: action,
                method: .post,
                headers: theirs,
                body: B.form(["csrf": stranger.csrf])
            )
            #expect(refused.status == .notFound)
            #expect(try await f.store.auditRecords(job: job.id, limit: 5).count == 1)
        }
    }
}

/// The dashboard's pages count against a key's rate limit, as the API's requests do.
@Suite("Dashboard rate limit")
struct DashboardRateLimitTests {
    @Test("past its burst a key's pages are 429 with Retry-After; another key's are not")
    func limited() async throws {
        let f = try await APIRouteTests.Fixture { $0.rateLimit = RateLimit(perSecond: 0.01, burst: 3) }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            // Signing in shows the jobs page once: one of the three.
            let browser = try await DashboardRouteTests.signIn(client, key: f.submit)
            for _ in 0..<2 {
                #expect(
                    try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie]).status
                        == .ok
                )
            }
            let refused = try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie])
            #expect(refused.status == .tooManyRequests)
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 > 0)
            let other = try await DashboardRouteTests.signIn(client, key: f.other)
            #expect(try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: other.cookie]).status == .ok)
        }
    }
}
