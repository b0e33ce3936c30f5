import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import NIOCore
import Queue
import SafeHTTP
import Testing

@testable import JobAPI

/// Failed keys are counted per key id and per client (issue 42: behind the documented nginx
/// block every client shares the proxy's address, and 40 bad keys a second locked every tenant
/// out). Over a real socket, so the peer address is real.
@Suite("Failed keys and sign-ins")
struct AuthFailureTests {
    typealias F = APIRouteTests.Fixture
    typealias D = DashboardRouteTests

    /// A key of a random id that does not exist (every one a new id: only the address counts).
    static func unknownKey() -> String {
        "jck_" + String(format: "%012llx", UInt64.random(in: 0..<(1 << 48))) + "_" + String(repeating: "b", count: 43)
    }

    static func status(_ client: some TestClientProtocol, key: String, forwardedFor: String? = nil) async throws -> Int
    {
        var headers = APIRouteTests.headers(key)
        if let forwardedFor { headers[TrustedProxies.forwardedFor] = forwardedFor }
        return Int(try await client.execute(uri: "/v1/jobs", method: .get, headers: headers).status.code)
    }

    /// Sends bad keys until one is answered 429 (at most 200): the statuses.
    static func failUntilLimited(
        _ client: some TestClientProtocol,
        key: () -> String = unknownKey,
        forwardedFor: String? = nil
    ) async throws -> [Int] {
        var statuses: [Int] = []
        while statuses.count < 200, statuses.last != 429 {
            statuses.append(try await status(client, key: key(), forwardedFor: forwardedFor))
        }
        return statuses
    }

    @Test("bad keys from the address every client shares: failures get 429, valid keys and sign-ins never do")
    func sharedAddress() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.live) { client in
            let statuses = try await Self.failUntilLimited(client)
            #expect(statuses.last == 429 && statuses.count > 10, "\(statuses)")
            // The attacker keeps going between every valid request (the address's bucket refills
            // at ten a second, so now and then one of its keys is a 401 again).
            var refused: [Int] = []
            for round in 0..<20 {
                refused.append(try await Self.status(client, key: Self.unknownKey()))
                #expect(try await Self.status(client, key: f.read) == 200, "a valid key, round \(round)")
            }
            #expect(refused.contains(429) && refused.allSatisfy { [401, 429].contains($0) }, "\(refused)")
            for _ in 0..<5 { _ = try await D.signIn(client, key: f.submit) }
        }
    }

    @Test("one key id with wrong secrets is limited on its own; another id, and the key itself, are not")
    func perKeyID() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.live) { client in
            let wrong = String(f.submit.dropLast(3)) + "zzz"
            let statuses = try await Self.failUntilLimited(client) { wrong }
            // Ten failures for the id (its burst), well before the address's twenty.
            #expect(statuses.last == 429 && statuses.count <= 12, "\(statuses)")
            #expect(try await Self.status(client, key: Self.unknownKey()) == 401, "another id: not limited yet")
            #expect(try await Self.status(client, key: f.submit) == 200, "the key's holder is never refused")
        }
    }

    @Test("--trusted-proxy: X-Forwarded-For names the client; without it the header is not believed")
    func trustedProxy() async throws {
        let trusting = try await F {
            $0.trustedProxies = TrustedProxies(["127.0.0.0/8", "::1"].compactMap(AddressRange.init))
        }
        defer { trusting.directory.remove() }
        try await trusting.app.test(.live) { client in
            let limited = try await Self.failUntilLimited(client, forwardedFor: "198.51.100.7")
            #expect(limited.last == 429, "\(limited)")
            #expect(
                try await Self.status(client, key: Self.unknownKey(), forwardedFor: "198.51.100.8") == 401,
                "another client behind the same proxy"
            )
            // A client's own X-Forwarded-For entries (left of the proxy's) are its word: not
            // believed. Still the limited client: limited again at once (a fresh one takes 20).
            let again = try await Self.failUntilLimited(client, forwardedFor: "203.0.113.9, 198.51.100.7")
            #expect(again.count <= 5, "\(again)")
        }
        let plain = try await F()
        defer { plain.directory.remove() }
        try await plain.app.test(.live) { client in
            _ = try await Self.failUntilLimited(client, forwardedFor: "198.51.100.7")
            let other = try await Self.failUntilLimited(client, forwardedFor: "198.51.100.8")
            #expect(other.count <= 5, "an untrusted peer's header changes nothing: \(other)")
        }
    }

    @Test("the client's address: the peer, or past the trusted proxies from the right of X-Forwarded-For")
    func clientAddress() throws {
        let proxies = TrustedProxies(["10.0.0.0/8", "192.0.2.1", "2001:db8::/32"].compactMap(AddressRange.init))
        #expect(proxies.ranges.count == 3)
        func client(_ peer: String?, _ forwarded: [String]) -> String? {
            var headers = HTTPFields()
            for value in forwarded { headers.append(HTTPField(name: TrustedProxies.forwardedFor, value: value)) }
            return proxies.client(peer: peer, headers: headers)
        }
        #expect(client("198.51.100.1", ["203.0.113.5"]) == "198.51.100.1", "an untrusted peer is the client")
        #expect(client("10.1.2.3", ["203.0.113.5"]) == "203.0.113.5")
        #expect(client("10.1.2.3", ["1.1.1.1, 203.0.113.5, 10.9.9.9"]) == "203.0.113.5", "past every proxy")
        #expect(client("10.1.2.3", ["1.1.1.1", "203.0.113.5"]) == "203.0.113.5", "several headers are one list")
        #expect(client("10.1.2.3", []) == nil, "a proxy that did not say: unknown")
        #expect(client("10.1.2.3", ["not-an-address"]) == nil)
        #expect(client("10.1.2.3", ["10.0.0.9, 192.0.2.1"]) == "10.0.0.9", "only proxies: the first of them")
        #expect(client("::ffff:10.1.2.3", ["203.0.113.5"]) == "203.0.113.5", "a mapped IPv4 peer")
        #expect(client("2001:db8::5", ["2001:db9::1"]) == "2001:db9::1")
        #expect(client(nil, []) == "unknown")
    }

    @Test("address ranges: prefixes at every width, both families, refusals")
    func ranges() throws {
        let range = try #require(AddressRange("10.0.0.0/8"))
        #expect(range.contains(try #require(IPAddress("10.255.1.2"))))
        #expect(!range.contains(try #require(IPAddress("11.0.0.0"))))
        #expect(!range.contains(try #require(IPAddress("::ffff:10.0.0.1"))), "families do not mix")
        #expect(try #require(AddressRange("0.0.0.0/0")).contains(try #require(IPAddress("203.0.113.1"))))
        #expect(try #require(AddressRange("192.0.2.1")).bits == 32)
        let odd = try #require(AddressRange("172.16.0.0/12"))
        #expect(odd.contains(try #require(IPAddress("172.31.255.255"))))
        #expect(!odd.contains(try #require(IPAddress("172.32.0.0"))))
        let v6 = try #require(AddressRange("2001:db8::/33"))
        #expect(v6.contains(try #require(IPAddress("2001:db8:7fff::1"))))
        #expect(!v6.contains(try #require(IPAddress("2001:db8:8000::1"))))
        for bad in [
            "10.0.0.0/33", "10.0.0.0/-1", "::/129", "example.com", "10.0.0.0/", "/8", "10.0.0.0/8/8", "1.2.3.4/٣",
        ] {
            #expect(AddressRange(bad) == nil, "\(bad)")
        }
    }
}
