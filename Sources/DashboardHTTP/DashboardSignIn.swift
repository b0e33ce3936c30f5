import Dashboard
import Foundation
import Hummingbird
import JobAPI
import Queue

/// Signing in with an API key and out again (docs/dashboard.md, "Sessions and CSRF"): the sign-in
/// form's token is the servers' HMAC of its cookie, the post must come from this origin, and a
/// failed key is counted as the API counts it (`AuthFailures`).
extension DashboardRoutes {
    func signInPage(
        _ request: Request,
        _ context: DashboardRequestContext,
        error: String?,
        status: HTTPResponse.Status = .ok
    ) async throws -> Response {
        let cookie = SessionCookie.randomToken()
        let token = SessionCookie.signInToken(for: cookie, key: try await signInKey.key(store))
        var response = html(
            pages.render(SignInView(root: context.links.root, csrf: token, error: error), as: "signin"),
            status: status
        )
        response.headers[values: .setCookie].append(
            SessionCookie.header(
                name: SessionCookie.signInName(secure: secureCookies),
                value: cookie,
                maxAge: 3600,
                secure: secureCookies
            )
        )
        return response
    }

    func signIn(_ request: Request, _ context: DashboardRequestContext) async throws -> Response {
        let client = failures.proxies.client(peer: context.remoteAddress?.ipAddress, headers: request.headers)
        let address = client ?? "unknown"
        guard Self.fromThisOrigin(request) else {
            logger.warning("Refused a dashboard sign-in from another origin", metadata: ["address": "\(address)"])
            return try await signInPage(
                request,
                context,
                error: "That sign-in did not come from this page.",
                status: .forbidden
            )
        }
        let form = try await Self.form(request, context)
        let cookie = SessionCookie.value(
            named: SessionCookie.signInName(secure: secureCookies),
            in: request.headers[.cookie]
        )
        let key = try await signInKey.key(store)
        guard let cookie, let token = form["csrf"],
            SessionCookie.sameToken(token, SessionCookie.signInToken(for: cookie, key: key))
        else {
            return try await signInPage(
                request,
                context,
                error: "The sign-in form expired. Try again.",
                status: .forbidden
            )
        }
        guard let text = form["key"], let key = try await APIKeys.verify(Substring(text), in: store) else {
            let id = form["key"].flatMap { APIKeys.parse(Substring($0))?.id }
            if let wait = failures.failed(keyID: id, client: client) {
                return try await signInPage(
                    request,
                    context,
                    error: "Too many failed sign-ins: wait \(wait) s.",
                    status: .tooManyRequests
                )
            }
            logger.warning(
                "Refused a dashboard sign-in",
                metadata: ["key.id": "\(id ?? "malformed")", "address": "\(address)"]
            )
            return try await signInPage(
                request,
                context,
                error: "That key is not valid, or was revoked.",
                status: .unauthorized
            )
        }
        let (id, session) = SessionCookie.open(for: key, at: now())
        try await store.createSession(session)
        logger.info("Signed in to the dashboard", metadata: ["key.id": "\(key.id)", "address": "\(address)"])
        var response = Self.redirect(context.links.jobs)
        response.headers[values: .setCookie].append(
            SessionCookie.header(
                name: SessionCookie.name(secure: secureCookies),
                value: id,
                maxAge: Int(SessionCookie.lifetime),
                secure: secureCookies
            )
        )
        response.headers[values: .setCookie].append(
            SessionCookie.removal(name: SessionCookie.signInName(secure: secureCookies), secure: secureCookies)
        )
        return response
    }

    func signOut(_ request: Request, _ session: Session) async throws -> Response {
        _ = try await store.deleteSession(idHash: session.row.idHash)
        var response = Self.redirect(session.links.signIn)
        response.headers[values: .setCookie].append(
            SessionCookie.removal(name: SessionCookie.name(secure: secureCookies), secure: secureCookies)
        )
        return response
    }
}
