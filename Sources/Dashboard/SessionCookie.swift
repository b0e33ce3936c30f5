import Crypto
import Foundation
import JobctlCore
import Queue

/// The dashboard's session cookie and the tokens its forms carry (docs/dashboard.md, "Sessions").
///
/// Signing in with an API key opens a session: a random 256-bit id goes to the browser in an
/// `HttpOnly`, `SameSite=Strict` cookie (`Secure` under TLS), and the database keeps its SHA-256
/// with the key's id, a random CSRF token and an expiry. Every form of the session carries the
/// token; an action without it, or with another session's, is refused. The sign-in form has a
/// token of its own before there is a session: a random value in a short-lived cookie, and in the
/// form its HMAC under a key only the servers hold (`signInToken`), so a cookie planted by a page
/// of the same site (another port, a sibling subdomain) has no form token to go with it. Under
/// TLS both cookies are `__Host-` cookies, which no other host or subdomain can set.
public enum SessionCookie {
    /// The session cookie's name without TLS.
    public static let name = "jobctl_session"
    /// The sign-in form's cookie without TLS.
    public static let signInName = "jobctl_signin"
    /// What `__Host-` asks of a cookie's browser: `Secure`, `Path=/`, no `Domain`.
    static let hostPrefix = "__Host-"

    /// The session cookie's name: a `__Host-` cookie under TLS.
    public static func name(secure: Bool) -> String { secure ? hostPrefix + name : name }
    /// The sign-in form's cookie's name: a `__Host-` cookie under TLS.
    public static func signInName(secure: Bool) -> String { secure ? hostPrefix + signInName : signInName }

    /// The form token that goes with the sign-in cookie `cookie`: its HMAC-SHA256 under the
    /// servers' key, 43 characters of base64url.
    public static func signInToken(for cookie: String, key: SymmetricKey) -> String {
        SecretText.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data(cookie.utf8), using: key)))
    }
    /// How long a session lasts from signing in (sessions do not slide: sign in again after).
    public static let lifetime: TimeInterval = 12 * 3600

    /// A new random token: 256 bits in base64url (43 characters).
    public static func randomToken() -> String { SecretText.base64URL(Data(SecretText.randomBytes(32))) }

    /// What the store keeps of a session id: lowercase hex SHA-256.
    public static func hash(_ id: String) -> String { SecretText.hex(SHA256.hash(data: Data(id.utf8))) }

    /// A new session for `key`, opened at `now`: the cookie's id, and the row to store.
    public static func open(for key: APIKey, at now: Date) -> (id: String, session: DashboardSession) {
        let id = randomToken()
        let session = DashboardSession(
            idHash: hash(id),
            keyID: key.id,
            csrfToken: randomToken(),
            createdAt: now,
            expiresAt: now.addingTimeInterval(lifetime)
        )
        return (id, session)
    }

    /// The value of cookie `name` in a `Cookie` header (`a=1; b=2`), if it is there once and
    /// shaped like a token. A cookie sent twice (one set by a sibling subdomain, say) is refused.
    public static func value(named name: String, in header: String?) -> String? {
        guard let header else { return nil }
        let values = header.split(separator: ";").compactMap { pair -> Substring? in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { return nil }
            return Substring(parts[1].trimmingCharacters(in: .whitespaces))
        }
        guard values.count == 1, let value = values.first, isToken(value) else { return nil }
        return String(value)
    }

    /// 43 characters of base64url: what `randomToken()` makes.
    public static func isToken(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 43
            && text.utf8.allSatisfy { byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45
                    || byte == 95
            }
    }

    /// `Set-Cookie` for a value. No `Path` without TLS: the browser scopes it to the directory
    /// of the page that set it, `/ui/` here or `/prefix/ui/` behind a proxy, so a base path
    /// needs no setting. A `__Host-` cookie must have `Path=/`.
    public static func header(name: String, value: String, maxAge: Int, secure: Bool) -> String {
        let path = name.hasPrefix(hostPrefix) ? "; Path=/" : ""
        return "\(name)=\(value); Max-Age=\(maxAge)\(path); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }

    /// `Set-Cookie` that removes a cookie.
    public static func removal(name: String, secure: Bool) -> String {
        header(name: name, value: "", maxAge: 0, secure: secure)
    }

    /// Compares two tokens in time that depends only on their length.
    public static func sameToken(_ a: String, _ b: String) -> Bool { !a.isEmpty && SecretText.constantTimeEqual(a, b) }
}
