import Foundation
import Queue
import Testing

@testable import Dashboard

/// The session cookie: tokens, hashing, reading a `Cookie` header, the `Set-Cookie` line.
@Suite("Dashboard session cookie")
struct SessionCookieTests {
    @Test("tokens are 43 base64url characters, different every time")
    func tokens() {
        let tokens = (0..<100).map { _ in SessionCookie.randomToken() }
        #expect(Set(tokens).count == 100)
        #expect(tokens.allSatisfy(SessionCookie.isToken))
        #expect(!SessionCookie.isToken("short"))
        #expect(!SessionCookie.isToken(String(repeating: "a", count: 42) + "="))
        #expect(!SessionCookie.isToken(String(repeating: "a", count: 42) + "/"))
    }

    @Test("a session stores the id's hash, the key, a token of its own and a 12 h expiry")
    func open() {
        let key = APIKey(id: "0123456789ab", name: "ops", scope: .admin, createdAt: Date())
        let now = Date(milliseconds: 1_795_780_800_000)
        let (id, session) = SessionCookie.open(for: key, at: now)
        #expect(session.idHash == SessionCookie.hash(id) && session.idHash != id)
        #expect(session.idHash.count == 64 && session.idHash.allSatisfy(\.isHexDigit))
        #expect(session.keyID == key.id)
        #expect(SessionCookie.isToken(session.csrfToken) && session.csrfToken != id)
        #expect(session.expiresAt.timeIntervalSince(now) == 12 * 3600)
        // SHA-256 of "abc", the standard's own example.
        #expect(SessionCookie.hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("the cookie is read from a header once, shaped as a token, or not at all")
    func reading() {
        let token = SessionCookie.randomToken()
        #expect(SessionCookie.value(named: "jobctl_session", in: "jobctl_session=\(token)") == token)
        #expect(SessionCookie.value(named: "jobctl_session", in: "a=1; jobctl_session=\(token); b=2") == token)
        #expect(SessionCookie.value(named: "jobctl_session", in: nil) == nil)
        #expect(SessionCookie.value(named: "jobctl_session", in: "jobctl_session=short") == nil)
        #expect(SessionCookie.value(named: "jobctl_session", in: "xjobctl_session=\(token)") == nil)
        let other = SessionCookie.randomToken()
        #expect(
            SessionCookie.value(named: "jobctl_session", in: "jobctl_session=\(token); jobctl_session=\(other)") == nil,
            "a cookie sent twice (one planted by a sibling subdomain) is refused"
        )
    }

    @Test("Set-Cookie: HttpOnly, SameSite=Strict, no Path, Secure only when asked")
    func setCookie() {
        let line = SessionCookie.header(name: "jobctl_session", value: "v", maxAge: 60, secure: false)
        #expect(line == "jobctl_session=v; Max-Age=60; HttpOnly; SameSite=Strict")
        #expect(SessionCookie.header(name: "n", value: "v", maxAge: 1, secure: true).hasSuffix("; Secure"))
        #expect(SessionCookie.removal(name: "n", secure: false) == "n=; Max-Age=0; HttpOnly; SameSite=Strict")
    }

    @Test("tokens compare equal only when equal, and never when empty")
    func comparing() {
        #expect(SessionCookie.sameToken("abc", "abc"))
        #expect(!SessionCookie.sameToken("abc", "abd"))
        #expect(!SessionCookie.sameToken("abc", "abcd"))
        #expect(!SessionCookie.sameToken("", ""))
    }
}
