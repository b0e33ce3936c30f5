import Dashboard
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import NIOCore
import Queue
import QueueSQLite
import Testing

/// The dashboard's routes on a real SQLite store: signing in, sessions, tokens, scopes, tenancy.
@Suite("Dashboard routes")
struct DashboardRouteTests {
    typealias F = APIRouteTests.Fixture

    /// A signed-in browser: its session cookie and the token its forms carry.
    struct Browser {
        let cookie: String
        let csrf: String
    }

    static func token(in page: String) -> String? {
        guard let range = page.range(of: #"name="csrf" value="([A-Za-z0-9_-]{43})""#, options: .regularExpression)
        else {
            return nil
        }
        return String(page[range].dropFirst(#"name="csrf" value=""#.count).dropLast())
    }

    static func cookie(_ name: String, in response: TestResponse) -> String? {
        response.headers[values: .setCookie].first { $0.hasPrefix("\(name)=") }
            .map { String($0.prefix { $0 != ";" }) }
    }

    static func form(_ fields: [String: String]) -> ByteBuffer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let text = fields.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
        return ByteBuffer(string: text)
    }

    static let formType: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    static func signIn(_ client: some TestClientProtocol, key: String) async throws -> Browser {
        let page = try await client.execute(uri: "/ui/signin", method: .get)
        let signInCookie = try #require(cookie("jobctl_signin", in: page))
        let signInToken = try #require(token(in: String(buffer: page.body)))
        var headers = formType
        headers[.cookie] = signInCookie
        let response = try await client.execute(
            uri: "/ui/signin",
            method: .post,
            headers: headers,
            body: form(["csrf": signInToken, "key": key])
        )
        #expect(response.status == .seeOther)
        let session = try #require(cookie("jobctl_session", in: response))
        let jobs = try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: session])
        #expect(jobs.status == .ok)
        return Browser(cookie: session, csrf: try #require(token(in: String(buffer: jobs.body))))
    }

    static func submit(_ f: F, key: String, input: String, kind: JobKind = .export) async throws -> Job {
        var request = JobRequest(input: input, output: "/out/x.mp4", preset: "low", presetSettings: .object([:]))
        request.kind = kind
        request.owner = String(key.split(separator: "_")[1])
        return try await f.store.submit(request).job
    }

    @Test("signed out: pages send the browser to sign in; the sign-in form sets its own token")
    func signedOut() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            for path in ["/ui/", "/ui/jobs/0192"] {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .seeOther, "\(path)")
                #expect(response.headers[.location]?.hasSuffix("signin") == true)
            }
            #expect(try await client.execute(uri: "/ui", method: .get).headers[.location] == "ui/")
            let page = try await client.execute(uri: "/ui/signin", method: .get)
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            let policy = try #require(page.headers[.contentSecurityPolicy])
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
            #expect(page.headers[.init("X-Frame-Options")!] == "DENY")
            let setCookie = try #require(page.headers[values: .setCookie].first)
            #expect(setCookie.contains("HttpOnly") && setCookie.contains("SameSite=Strict"))
            #expect(!setCookie.contains("Secure"), "no TLS here")
            let body = String(buffer: page.body)
            #expect(body.contains(#"type="password""#))
            #expect(Self.token(in: body) != nil)
            // An action with no session is refused, not redirected.
            let action = try await client.execute(uri: "/ui/jobs/x/cancel", method: .post, headers: Self.formType)
            #expect(action.status == .forbidden)
        }
    }

    @Test("sign-in: the form's token must match its cookie; a bad key is 401; a good one opens a session")
    func signIn() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let page = try await client.execute(uri: "/ui/signin", method: .get)
            let cookie = try #require(Self.cookie("jobctl_signin", in: page))
            let token = try #require(Self.token(in: String(buffer: page.body)))
            var headers = Self.formType
            headers[.cookie] = cookie
            // A forged sign-in (another site's form): no cookie, or another token.
            let forged = try await client.execute(
                uri: "/ui/signin",
                method: .post,
                headers: Self.formType,
                body: Self.form(["csrf": token, "key": f.submit])
            )
            #expect(forged.status == .forbidden)
            #expect(Self.cookie("jobctl_session", in: forged) == nil)
            let other = try await client.execute(
                uri: "/ui/signin",
                method: .post,
                headers: headers,
                body: Self.form(["csrf": String(repeating: "A", count: 43), "key": f.submit])
            )
            #expect(other.status == .forbidden)
            let bad = try await client.execute(
                uri: "/ui/signin",
                method: .post,
                headers: headers,
                body: Self.form(["csrf": token, "key": f.submit + "x"])
            )
            #expect(bad.status == .unauthorized)
            #expect(String(buffer: bad.body).contains("not valid"))
            #expect(!String(buffer: bad.body).contains(f.submit), "the key typed is not shown back")
            let good = try await client.execute(
                uri: "/ui/signin",
                method: .post,
                headers: headers,
                body: Self.form(["csrf": token, "key": f.submit])
            )
            #expect(good.status == .seeOther)
            let session = try #require(good.headers[values: .setCookie].first { $0.hasPrefix("jobctl_session=") })
            #expect(
                session.contains("HttpOnly") && session.contains("SameSite=Strict") && session.contains("Max-Age=43200")
            )
            // The store keeps a hash, never the cookie.
            let id = String(session.dropFirst("jobctl_session=".count).prefix { $0 != ";" })
            #expect(try await f.store.session(idHash: id, at: Date()) == nil)
            #expect(try await f.store.session(idHash: SessionCookie.hash(id), at: Date())?.keyID == f.submitID)
        }
    }

    @Test(
        "the jobs page: the key's own jobs only, filtered, escaped; counts of the key's own jobs, the queue's for admins"
    )
    func jobsPage() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let mine = try await Self.submit(f, key: f.submit, input: "/in/<script>alert(1)</script>.mov")
        let hls = try await Self.submit(f, key: f.submit, input: "/in/talk.mov", kind: "hls")
        let theirs = try await Self.submit(f, key: f.other, input: "/in/secret-of-another-tenant.mov")
        try await f.app.test(.router) { client in
            let browser = try await Self.signIn(client, key: f.submit)
            let page = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie]).body
            )
            #expect(page.contains(mine.id.rawValue) && page.contains(hls.id.rawValue))
            #expect(!page.contains(theirs.id.rawValue) && !page.contains("secret-of-another-tenant"))
            #expect(!page.contains("<script>alert(1)</script>"), "an input path is markup")
            #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            // Its own two jobs, not the other tenant's third.
            #expect(page.contains("Not ended <span class=\"count\">2</span>"), "a tenant counts its own jobs")

            let filtered = String(
                buffer: try await client.execute(
                    uri: "/ui/?q=kind:hls",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            #expect(filtered.contains(hls.id.rawValue) && !filtered.contains(mine.id.rawValue))
            let negated = String(
                buffer: try await client.execute(
                    uri: "/ui/?q=-kind:hls",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            // Rows link to their jobs (the page names the key's newest job for its live updates).
            #expect(!negated.contains("jobs/\(hls.id.rawValue)") && negated.contains("jobs/\(mine.id.rawValue)"))
            let wrong = try await client.execute(
                uri: "/ui/?q=colour:red",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(wrong.status == .ok)
            #expect(
                String(buffer: wrong.body).contains("no filter &#39;colour:&#39;")
                    || String(buffer: wrong.body).contains("no filter 'colour:'")
            )
            let badCursor = try await client.execute(
                uri: "/ui/?after=zzz",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(badCursor.status == .badRequest)

            let admin = try await Self.signIn(client, key: f.admin)
            let all = String(
                buffer: try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: admin.cookie]).body
            )
            #expect(all.contains(theirs.id.rawValue) && all.contains("Counts as of"))
            #expect(all.contains("Not ended <span class=\"count\">3</span>"), "an admin counts the queue")
        }
    }

    @Test("actions need the session's token and a key that may act; each is audited")
    func actions() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let job = try await Self.submit(f, key: f.submit, input: "/in/a.mov")
        let theirs = try await Self.submit(f, key: f.other, input: "/in/b.mov")
        try await f.app.test(.router) { client in
            let browser = try await Self.signIn(client, key: f.submit)
            var headers = Self.formType
            headers[.cookie] = browser.cookie
            let path = "/ui/jobs/\(job.id.rawValue)/cancel"
            // Forged: no token, another session's token.
            let forged = try await client.execute(uri: path, method: .post, headers: headers, body: Self.form([:]))
            #expect(forged.status == .forbidden)
            let second = try await Self.signIn(client, key: f.submit)
            let crossed = try await client.execute(
                uri: path,
                method: .post,
                headers: headers,
                body: Self.form(["csrf": second.csrf])
            )
            #expect(crossed.status == .forbidden)
            #expect(try await f.store.job(job.id)?.status == .unknown, "a refused action changed the job")
            // Another tenant's job: as if it did not exist.
            let foreign = try await client.execute(
                uri: "/ui/jobs/\(theirs.id.rawValue)/cancel",
                method: .post,
                headers: headers,
                body: Self.form(["csrf": browser.csrf])
            )
            #expect(foreign.status == .notFound)
            #expect(try await f.store.job(theirs.id)?.status == .unknown)
            let page = try await client.execute(
                uri: "/ui/jobs/\(theirs.id.rawValue)",
                method: .get,
                headers: [.cookie: browser.cookie]
            )
            #expect(page.status == .notFound)
            // The real thing.
            let cancel = try await client.execute(
                uri: path,
                method: .post,
                headers: headers,
                body: Self.form(["csrf": browser.csrf])
            )
            #expect(cancel.status == .seeOther)
            #expect(
                APIRouteTests.resolved(cancel.headers[.location], from: path)
                    == "/ui/jobs/\(job.id.rawValue)?done=cancelled"
            )
            #expect(try await f.store.job(job.id)?.status == .cancelled)
            let retry = try await client.execute(
                uri: "/ui/jobs/\(job.id.rawValue)/retry",
                method: .post,
                headers: headers,
                body: Self.form(["csrf": browser.csrf])
            )
            #expect(
                APIRouteTests.resolved(retry.headers[.location], from: "/ui/jobs/\(job.id.rawValue)/retry")
                    == "/ui/jobs/\(job.id.rawValue)?done=retried"
            )
            #expect(try await f.store.job(job.id)?.status == .unknown)
            let audit = try await f.store.auditRecords(job: job.id, limit: 10)
            #expect(audit.map(\.action) == ["retry", "cancel"])
            #expect(audit.allSatisfy { $0.keyID == f.submitID })
            let shown = String(
                buffer: try await client.execute(
                    uri: "/ui/jobs/\(job.id.rawValue)?done=retried",
                    method: .get,
                    headers: [.cookie: browser.cookie]
                ).body
            )
            #expect(shown.contains("Queued again.") && shown.contains("Actions taken"))

            // A read key looks, and is refused when it acts.
            let reader = try await Self.signIn(client, key: f.read)
            var readHeaders = Self.formType
            readHeaders[.cookie] = reader.cookie
            let look = String(
                buffer: try await client.execute(
                    uri: "/ui/jobs/\(theirs.id.rawValue)",
                    method: .get,
                    headers: [.cookie: reader.cookie]
                ).body
            )
            #expect(!look.contains(">Cancel<"), "a read key is not offered actions")
            let refused = try await client.execute(
                uri: "/ui/jobs/\(job.id.rawValue)/cancel",
                method: .post,
                headers: readHeaders,
                body: Self.form(["csrf": reader.csrf])
            )
            #expect(refused.status == .forbidden)
            #expect(String(buffer: refused.body).contains("read-only"))
            #expect(try await f.store.job(job.id)?.status == .unknown)
        }
    }

    @Test("signing out, and revoking the key, end the session")
    func sessionEnds() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let browser = try await Self.signIn(client, key: f.submit)
            var headers = Self.formType
            headers[.cookie] = browser.cookie
            let out = try await client.execute(
                uri: "/ui/signout",
                method: .post,
                headers: headers,
                body: Self.form(["csrf": browser.csrf])
            )
            #expect(out.status == .seeOther)
            #expect(
                out.headers[values: .setCookie].contains {
                    $0.hasPrefix("jobctl_session=;") && $0.contains("Max-Age=0")
                }
            )
            let after = try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie])
            #expect(after.status == .seeOther, "the old cookie still worked")

            let again = try await Self.signIn(client, key: f.submit)
            #expect(try await f.store.revokeAPIKey(id: f.submitID, at: Date()))
            let revoked = try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: again.cookie])
            #expect(revoked.status == .seeOther, "a revoked key's session went on")
            // A cookie that is not one: refused without a lookup of anything odd.
            let junk = try await client.execute(
                uri: "/ui/",
                method: .get,
                headers: [.cookie: "jobctl_session=../../etc"]
            )
            #expect(junk.status == .seeOther)
        }
    }

    @Test("the assets are served with their types; no other file is")
    func assets() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let script = try await client.execute(uri: "/ui/assets/app.js", method: .get)
            #expect(script.status == .ok && script.headers[.contentType] == "text/javascript; charset=utf-8")
            let style = try await client.execute(uri: "/ui/assets/app.css", method: .get)
            #expect(style.status == .ok && style.headers[.contentType] == "text/css; charset=utf-8")
            #expect(try await client.execute(uri: "/ui/assets/..%2Fjobs.sqlite", method: .get).status == .notFound)
        }
    }
}
