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
import Testing

/// Login CSRF and cross-origin posts (issue 42): a page of the same site on another port, or a
/// sibling subdomain, could plant the sign-in cookie and post it back, switching an admin's
/// browser to another tenant's session.
@Suite("Dashboard forms from other origins")
struct DashboardOriginTests {
    typealias F = APIRouteTests.Fixture
    typealias D = DashboardRouteTests

    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let host = HTTPField.Name("Host")!

    /// A sign-in post with these cookie and form token, and extra headers.
    static func signIn(
        _ client: some TestClientProtocol,
        cookie: String?,
        token: String,
        key: String,
        headers extra: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = D.formType
        if let cookie { headers[.cookie] = cookie }
        headers.append(contentsOf: extra)
        return try await client.execute(
            uri: "/ui/signin",
            method: .post,
            headers: headers,
            body: D.form(["csrf": token, "key": key])
        )
    }

    @Test("a planted sign-in cookie and its own value as the token: refused (the token is the servers' HMAC)")
    func plantedCookie() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            // What a sibling subdomain can do without asking the server: any token-shaped value,
            // set as the cookie and repeated in the form (the double-submit of before).
            let planted = SessionCookie.randomToken()
            let forged = try await Self.signIn(client, cookie: "jobctl_signin=\(planted)", token: planted, key: f.other)
            #expect(forged.status == .forbidden)
            #expect(D.cookie("jobctl_session", in: forged) == nil, "a planted cookie opened a session")
            // The page's own pair still signs in, and the token is not the cookie.
            let page = try await client.execute(uri: "/ui/signin", method: .get)
            let cookie = try #require(D.cookie("jobctl_signin", in: page))
            let token = try #require(D.token(in: String(buffer: page.body)))
            #expect(!cookie.hasSuffix("=" + token))
            let good = try await Self.signIn(client, cookie: cookie, token: token, key: f.submit)
            #expect(good.status == .seeOther)
        }
    }

    @Test("a POST from another origin (Sec-Fetch-Site, or Origin against Host) is refused: sign-in and actions")
    func otherOrigins() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let job = try await D.submit(f, key: f.submit, input: "/in/a.mov")
        try await f.app.test(.router) { client in
            let page = try await client.execute(uri: "/ui/signin", method: .get)
            let cookie = try #require(D.cookie("jobctl_signin", in: page))
            let token = try #require(D.token(in: String(buffer: page.body)))
            let refusedHeaders: [HTTPFields] = [
                [Self.fetchSite: "same-site"], [Self.fetchSite: "cross-site"], [Self.fetchSite: "none"],
                [.origin: "http://dashboard.example:9999", Self.host: "dashboard.example:8080"],
                [.origin: "http://evil.example", Self.host: "dashboard.example"],
                [.origin: "null", Self.host: "dashboard.example"],
                [.origin: "https://dashboard.example:8443", Self.host: "dashboard.example"],
            ]
            func statuses(_ headers: [HTTPFields]) async throws -> [HTTPResponse.Status] {
                var statuses: [HTTPResponse.Status] = []
                for extra in headers {
                    let response = try await Self.signIn(
                        client,
                        cookie: cookie,
                        token: token,
                        key: f.submit,
                        headers: extra
                    )
                    statuses.append(response.status)
                }
                return statuses
            }
            #expect(try await statuses(refusedHeaders).allSatisfy { $0 == .forbidden })
            let acceptedHeaders: [HTTPFields] = [
                [Self.fetchSite: "same-origin", .origin: "http://other.example"],
                [.origin: "http://dashboard.example:8080", Self.host: "dashboard.example:8080"],
                [.origin: "https://Dashboard.example", Self.host: "dashboard.example:443"],
                [:],
            ]
            #expect(try await statuses(acceptedHeaders).allSatisfy { $0 == .seeOther })
            // An action of a signed-in session, with its token, from another origin.
            let browser = try await D.signIn(client, key: f.submit)
            var headers = D.formType
            headers[.cookie] = browser.cookie
            headers[Self.fetchSite] = "same-site"
            let path = "/ui/jobs/\(job.id.rawValue)/cancel"
            let crossed = try await client.execute(
                uri: path,
                method: .post,
                headers: headers,
                body: D.form(["csrf": browser.csrf])
            )
            #expect(crossed.status == .forbidden)
            #expect(try await f.store.job(job.id)?.status == .unknown, "a cross-origin post cancelled the job")
            headers[Self.fetchSite] = "same-origin"
            let same = try await client.execute(
                uri: path,
                method: .post,
                headers: headers,
                body: D.form(["csrf": browser.csrf])
            )
            #expect(same.status == .seeOther)
            #expect(try await f.store.job(job.id)?.status == .cancelled)
        }
    }

    @Test("under TLS the cookies are __Host- cookies (Secure, Path=/); a plain-named one is not read")
    func hostCookies() async throws {
        let f = try await F { $0.secureCookies = true }
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let page = try await client.execute(uri: "/ui/signin", method: .get)
            let setCookie = try #require(page.headers[values: .setCookie].first)
            #expect(setCookie.hasPrefix("__Host-jobctl_signin="))
            #expect(setCookie.contains("; Path=/") && setCookie.contains("; Secure") && !setCookie.contains("Domain"))
            let cookie = try #require(D.cookie("__Host-jobctl_signin", in: page))
            let token = try #require(D.token(in: String(buffer: page.body)))
            // The same value under the plain name (what a sibling subdomain could set): no.
            let plain = "jobctl_signin=" + cookie.dropFirst("__Host-jobctl_signin=".count)
            #expect(try await Self.signIn(client, cookie: plain, token: token, key: f.submit).status == .forbidden)
            let good = try await Self.signIn(client, cookie: cookie, token: token, key: f.submit)
            #expect(good.status == .seeOther)
            let session = try #require(
                good.headers[values: .setCookie].first { $0.hasPrefix("__Host-jobctl_session=") }
            )
            #expect(session.contains("; Path=/") && session.contains("; Secure"))
            let jobs = try await client.execute(
                uri: "/ui/",
                method: .get,
                headers: [.cookie: String(session.prefix { $0 != ";" })]
            )
            #expect(jobs.status == .ok)
        }
    }

    @Test("a sign-in form from one server is accepted by another of the same database")
    func twoServers() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let configuration = APIConfiguration(
            store: f.store,
            catalog: try PresetCatalog(customFile: nil),
            rateLimit: nil
        )
        let second = Application(router: APIServer.router(configuration, logger: Logger(label: "second")))
        let (cookie, token) = try await f.app.test(.router) { client in
            let page = try await client.execute(uri: "/ui/signin", method: .get)
            return (
                try #require(D.cookie("jobctl_signin", in: page)), try #require(D.token(in: String(buffer: page.body)))
            )
        }
        try await second.test(.router) { client in
            let response = try await Self.signIn(client, cookie: cookie, token: token, key: f.submit)
            #expect(response.status == .seeOther)
        }
    }
}
