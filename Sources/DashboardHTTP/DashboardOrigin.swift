import Crypto
import Dashboard
import Foundation
import HTTPTypes
import Hummingbird
import JobAPI
import JobctlCore
import Queue
import Synchronization

// Login CSRF and cross-origin actions (issue 42): a page on another port of the host, or on a
// sibling subdomain, is the same *site* as the dashboard, so `SameSite=Strict` lets its form
// posts carry the dashboard's cookies, and it can set cookies the dashboard reads. Every POST
// must come from a page of the dashboard's own *origin*, and the sign-in form's token is keyed
// by the servers, not only repeated from a cookie.
extension DashboardRoutes {
    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!
    /// `Host` as a field: HTTP/1's is the request's authority (NIOHTTPTypes moves it there), but
    /// a request built without one (a test's) may carry it as a field.
    static let hostField = HTTPField.Name("Host")!

    /// Whether a POST comes from a page of this origin. A browser says so in `Sec-Fetch-Site`
    /// (every current one sends it); one that does not sends `Origin`, which must name the
    /// host the request was sent to (`Host`, with its port). A request with neither is not a
    /// browser's form, and a cookie-less tool can forge nothing with it.
    static func fromThisOrigin(_ request: Request) -> Bool {
        if let site = request.headers[fetchSite] { return site == "same-origin" }
        guard let origin = request.headers[.origin] else { return true }
        // HTTP/1's `Host` is the request's authority (NIOHTTPTypes moves it there).
        guard let separator = origin.range(of: "://"),
            let authority = request.headers[hostField] ?? request.head.authority
        else { return false }
        let scheme = origin[..<separator.lowerBound].lowercased()
        let originAuthority = String(origin[separator.upperBound...])
        return normalized(originAuthority, scheme: scheme) == normalized(authority, scheme: scheme)
    }

    /// `host[:port]` lowercased, a scheme's default port dropped.
    private static func normalized(_ authority: String, scheme: String) -> String {
        let lower = authority.lowercased()
        let port = scheme == "https" ? ":443" : scheme == "http" ? ":80" : nil
        if let port, lower.hasSuffix(port) { return String(lower.dropLast(port.count)) }
        return lower
    }
}

/// The servers' key for the sign-in form's token: a secret in the job database
/// (`serverSecret("dashboard-sign-in")`), so that a form one `serve` gave out is accepted by
/// any other behind the same balancer; read once per process.
final class SignInKey: Sendable {
    private let cached = Mutex<SymmetricKey?>(nil)

    func key(_ store: any DashboardStore) async throws -> SymmetricKey {
        if let key = cached.withLock({ $0 }) { return key }
        let text = try await store.serverSecret("dashboard-sign-in") {
            SecretText.base64URL(Data(SecretText.randomBytes(32)))
        }
        cached.withLock { $0 = SymmetricKey(data: Data(text.utf8)) }
        return SymmetricKey(data: Data(text.utf8))
    }
}
