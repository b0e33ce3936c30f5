import Dashboard
import Foundation
import Hummingbird
import JobAPI
import Queue

extension DashboardRoutes {
    /// Who is signed in on a request, and with what.
    package struct Session: Sendable {
        let key: APIKey
        let row: DashboardSession
        let links: DashboardLinks
        /// An action's form fields, in order (read once, with its token).
        var form: [(String, String)] = []
        var frame: PageFrame {
            PageFrame.signedIn(root: links.root, key: key, csrf: row.csrfToken, onJobs: true)
        }
        /// Whose jobs the key sees: its own, or everybody's (`nil`) for an admin key.
        var owner: String? { key.scope == .admin ? nil : key.id }

        /// The last value of a form field.
        func field(_ name: String) -> String? { form.last { $0.0 == name }?.1 }
    }
}

/// The middleware of the dashboard's signed-in routes (docs/dashboard.md, "Sessions and CSRF"):
/// the session cookie names an open session of a key that is not revoked, or the browser is sent
/// to sign in; the key's requests are limited as the API's are. Every POST must come from this
/// origin and carry the session's form token, and needs the group's `acting` scope (a read key
/// looks and never acts, but may sign out). The session goes into the context
/// (`DashboardRequestContext.session`). Which routes it guards is the group they are added to,
/// never their path.
struct DashboardSessions: RouterMiddleware {
    /// What a request without a session gets, other than an action (a POST: 403).
    enum SignedOut {
        /// 303 to the sign-in page.
        case signIn
        /// 401: an event stream's `EventSource` stops at it (it would follow a redirect).
        case unauthorized
    }

    let routes: DashboardRoutes
    let signedOut: SignedOut
    /// The scope a POST of this group needs.
    let acting: APIScope

    func handle(
        _ request: Request,
        context: DashboardRequestContext,
        next: (Request, DashboardRequestContext) async throws -> Response
    ) async throws -> Response {
        let action = request.method == .post
        let links = context.links
        if action, !DashboardRoutes.fromThisOrigin(request) {
            routes.logger.warning(
                "Refused a dashboard action from another origin",
                metadata: ["path": "\(request.uri.path)"]
            )
            return routes.refusal(links, "This form did not come from this dashboard.", status: .forbidden)
        }
        let name = SessionCookie.name(secure: routes.secureCookies)
        let store = routes.store
        guard let cookie = SessionCookie.value(named: name, in: request.headers[.cookie]),
            let row = try await store.session(idHash: SessionCookie.hash(cookie), at: routes.now()),
            let key = try await store.apiKey(id: row.keyID)?.key, key.revokedAt == nil
        else {
            if action { return routes.refusal(links, "Your session has ended. Sign in again.", status: .forbidden) }
            switch signedOut {
            case .signIn: return DashboardRoutes.redirect(links.signIn)
            case .unauthorized: return Response(status: .unauthorized, headers: [.cacheControl: "no-store"])
            }
        }
        if let wait = routes.keyLimiter?.take(key.id) {
            var response = routes.refusal(
                links,
                "Too many requests from this key: wait \(wait) s.",
                status: .tooManyRequests
            )
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        var session = DashboardRoutes.Session(key: key, row: row, links: links)
        if action {
            session.form = try await DashboardRoutes.formPairs(request, context)
            guard let token = session.field("csrf"), SessionCookie.sameToken(token, row.csrfToken) else {
                routes.logger.warning(
                    "Refused a dashboard action without its form token",
                    metadata: ["key.id": "\(key.id)"]
                )
                return routes.refusal(
                    links,
                    "This form has expired or did not come from this dashboard.",
                    status: .forbidden
                )
            }
            guard key.scope >= acting else {
                return routes.refusal(
                    session,
                    "This key is read-only: it can look at jobs but not act on them.",
                    status: .forbidden
                )
            }
        }
        var context = context
        context.session = session
        let response = try await next(request, context)
        // A page costs its size too, as the API's responses do (files are bounded by
        // `FileReadLimit` instead).
        if response.headers[.contentType]?.hasPrefix("text/html") == true, let bytes = response.body.contentLength {
            routes.keyLimiter?.charge(key.id, responseBytes: bytes)
        }
        return response
    }
}

/// A signed-in route reached without `DashboardSessions` in front of it: a route added to the
/// wrong group, a defect (500, logged).
struct MissingSession: Error, CustomStringConvertible {
    let path: String?
    var description: String { "the dashboard route \(path ?? "?") is not behind DashboardSessions" }
}

extension DashboardRequestContext {
    /// The session `DashboardSessions` put in the context.
    func signedIn() throws(MissingSession) -> DashboardRoutes.Session {
        guard let session else { throw MissingSession(path: endpointPath) }
        return session
    }
}

/// `/ui` to `ui/`: the router takes both as one path, and the page's relative links need the
/// slash. In front of the root page's session check, so that a browser without one is sent to
/// `ui/` and from there to `signin` under it.
struct DirectorySlash: RouterMiddleware {
    func handle(
        _ request: Request,
        context: DashboardRequestContext,
        next: (Request, DashboardRequestContext) async throws -> Response
    ) async throws -> Response {
        guard request.uri.path.hasSuffix("/") else { return DashboardRoutes.redirect("ui/") }
        return try await next(request, context)
    }
}
