import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import JobAPIServer
import Logging
import Media
import Queue
import Testing

/// The router of `jobctl serve` by group (docs/architecture.md, "HTTP"): which checks a request
/// passes is the group its route is in. Every route is found in the router itself, so a route
/// added beside its group, not in it, fails here.
@Suite("Route groups")
struct RouteGroupTests {
    typealias F = APIRouteTests.Fixture
    typealias B = DashboardRouteTests

    /// The routes of the server's router on the fixture's store: method and path pattern.
    static func routes(_ f: F) throws -> [(method: HTTPRequest.Method, path: String)] {
        APIServer.router(
            APIConfiguration(store: f.store, catalog: try PresetCatalog(customFile: nil), rateLimit: nil),
            logger: Logger(label: "route-groups")
        )
        .routes.map { ($0.method, "\($0.path)") }
    }

    /// A routed path with its parameters filled in.
    static func concrete(_ path: String) -> String {
        path.replacingOccurrences(of: "{id}", with: "0192f000-0000-7000-8000-000000000001")
            .replacingOccurrences(of: "{delivery}", with: "d1")
            .replacingOccurrences(of: "{name}", with: "app.css")
    }

    @Test("every /v1 route, whatever its method, needs a key: 401 without one, or with a malformed one")
    func everyVersionOneRouteNeedsAKey() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let routes = try Self.routes(f).filter { $0.path.hasPrefix("/v1/") }
        #expect(routes.count >= 12, "\(routes.map { "\($0.method) \($0.path)" })")
        try await f.app.test(.router) { client in
            for route in routes {
                for key in [nil, "jck_nonsense"] {
                    // Refused by `KeyAuthentication`: 401, or 429 once this client's failures
                    // pass their burst (`AuthFailures`).
                    let response = try await client.execute(
                        uri: Self.concrete(route.path),
                        method: route.method,
                        headers: APIRouteTests.headers(key),
                        body: ByteBuffer(string: "{}")
                    )
                    #expect(
                        response.status == .unauthorized || response.status == .tooManyRequests,
                        "\(route.method) \(route.path) with \(key ?? "no key"): \(response.status)"
                    )
                    #expect(response.status != .unauthorized || response.headers[.wwwAuthenticate] == "Bearer")
                }
            }
        }
    }

    @Test("every /ui route but the sign-in page and the assets needs a session; a bearer key is not one")
    func everyDashboardRouteNeedsASession() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let open: Set<String> = ["/ui/signin", "/ui/assets/{name}"]
        let routes = try Self.routes(f).filter {
            ($0.path == "/ui" || $0.path.hasPrefix("/ui/")) && !open.contains($0.path)
        }
        #expect(routes.count >= 15, "\(routes.map { "\($0.method) \($0.path)" })")
        try await f.app.test(.router) { client in
            for route in routes {
                let path = route.path == "/ui" ? "/ui/" : Self.concrete(route.path)
                for key in [nil, f.admin] {
                    var headers = B.formType
                    if let key { headers[.authorization] = "Bearer \(key)" }
                    let response = try await client.execute(uri: path, method: route.method, headers: headers)
                    let what = "\(route.method) \(route.path) \(key == nil ? "" : "with a bearer key")"
                    switch route.method {
                    case .post:
                        // An action: refused, not redirected.
                        #expect(response.status == .forbidden, "\(what)")
                    case _ where route.path == "/ui/events":
                        // The event stream: 401 stops the browser's EventSource.
                        #expect(response.status == .unauthorized, "\(what)")
                    default:
                        #expect(response.status == .seeOther, "\(what)")
                        #expect(
                            APIRouteTests.resolved(response.headers[.location], from: path) == "/ui/signin",
                            "\(what): \(response.headers[.location] ?? "no location")"
                        )
                    }
                }
            }
        }
    }

    @Test("the open routes need no key: /healthz, /openapi.json; /metrics only when public")
    func openRoutes() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            for path in ["/healthz", "/openapi.json"] {
                for method in [HTTPRequest.Method.get, .head] {
                    try await client.execute(uri: path, method: method) {
                        #expect($0.status == .ok, "\(method) \(path)")
                    }
                }
            }
            try await client.execute(uri: "/metrics", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/metrics", method: .head) { #expect($0.status == .unauthorized) }
        }
    }

    @Test("a path no group routes is 404 with or without a key (405 with Allow for a routed path's other method)")
    func unroutedPaths() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            for key in [nil, f.submit] {
                for path in ["/nope", "/v1/nothing", "/v2/jobs", "/ui/nothing"] {
                    let response = try await client.execute(
                        uri: path,
                        method: .get,
                        headers: APIRouteTests.headers(key)
                    )
                    #expect(response.status == .notFound, "\(path) \(key == nil ? "without" : "with") a key")
                    #expect(APIRouteTests.errorCode(response).code == "not_found")
                    #expect(response.headers[.wwwAuthenticate] == nil, "nothing is said about keys on \(path)")
                }
                let other = try await client.execute(
                    uri: "/v1/jobs/\(Self.concrete("{id}"))",
                    method: .delete,
                    headers: APIRouteTests.headers(key)
                )
                #expect(other.status == .methodNotAllowed)
                #expect(other.headers[.allow] == "GET, HEAD")
            }
        }
    }

    @Test("paths that only look like a group's get no group's answer: prefixes, dot segments, encoded slashes")
    func lookalikePaths() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let admin = f.admin
        let browserHeaders = { @Sendable (cookie: String?) -> HTTPFields in
            var headers = APIRouteTests.headers(admin)
            if let cookie { headers[.cookie] = cookie }
            return headers
        }
        try await f.app.test(.router) { client in
            let browser = try await B.signIn(client, key: f.admin)
            let lookalikes = [
                "/uix", "/uix/", "/ui-x/signin", "/v1ui", "/v1x/jobs", "/v1jobs", "/ui%2Fsignin", "/v1%2Fjobs",
                "/ui/..%2Fv1/jobs", "/ui/../v1/jobs", "/v1/../ui/", "/V1/jobs", "/UI/",
                "/healthz/../v1/jobs", "/openapi.json/../v1/jobs",
            ]
            for path in lookalikes {
                // Without anything, with a key, with a key and a session: never a group's page.
                for headers in [HTTPFields(), browserHeaders(nil), browserHeaders(browser.cookie)] {
                    let response = try await client.execute(uri: path, method: .get, headers: headers)
                    #expect(response.status == .notFound, "\(path): \(response.status)")
                }
            }
            // Under /v1, what looks like /ui is a job id: the keyed group's, a session or not.
            let encoded = "/v1/jobs/..%2F..%2Fui%2F"
            for headers in [HTTPFields(), [.cookie: browser.cookie]] {
                try await client.execute(uri: encoded, method: .get, headers: headers) {
                    #expect($0.status == .unauthorized)
                }
            }
            try await client.execute(uri: encoded, method: .get, headers: browserHeaders(browser.cookie)) {
                #expect($0.status == .notFound)
                #expect(APIRouteTests.errorCode($0).code == "job_not_found")
            }
            // The real paths, for contrast: a key opens /v1, a session /ui, and neither the other.
            try await client.execute(uri: "/v1/jobs", method: .get, headers: browserHeaders(nil)) {
                #expect($0.status == .ok)
            }
            try await client.execute(uri: "/v1/jobs", method: .get, headers: [.cookie: browser.cookie]) {
                #expect($0.status == .unauthorized, "a session is not a key")
            }
            try await client.execute(uri: "/ui/", method: .get, headers: [.cookie: browser.cookie]) {
                #expect($0.status == .ok)
            }
        }
    }
}
