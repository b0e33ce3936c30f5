import Foundation
import HTTPTypes
import SafeHTTP

/// The proxies whose word is taken for the client's address (`serve --trusted-proxy`): when the
/// peer of a connection is one of them, the client is read from `X-Forwarded-For`; otherwise
/// the peer is the client.
public struct TrustedProxies: Sendable, Hashable {
    public var ranges: [AddressRange]

    public init(_ ranges: [AddressRange] = []) { self.ranges = ranges }

    public static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    func trusts(_ address: IPAddress) -> Bool { ranges.contains { $0.contains(address) } }

    /// The client's address, or `nil` when it cannot be known: a trusted proxy that did not say
    /// whom it forwards (or said something that is not an address). `X-Forwarded-For` is read
    /// from the right, past every trusted proxy, as each proxy appends the address it was
    /// reached from: entries left of that are the client's own word, which anyone can forge.
    package func client(peer: String?, headers: HTTPFields) -> String? {
        guard let peer, let address = IPAddress(peer).map(Self.unmapped) else { return peer ?? "unknown" }
        guard trusts(address) else { return address.description }
        let entries = headers[values: Self.forwardedFor].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var client: IPAddress?
        for entry in entries.reversed() {
            guard let hop = IPAddress(entry).map(Self.unmapped) else { return nil }
            client = hop
            if !trusts(hop) { break }
        }
        return client?.description
    }

    /// `::ffff:192.0.2.1` (an IPv4 peer of a socket listening on `::`) as `192.0.2.1`.
    static func unmapped(_ address: IPAddress) -> IPAddress {
        guard case .v6(let bytes) = address, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }),
            bytes[10] == 0xFF, bytes[11] == 0xFF
        else { return address }
        return .v4(bytes[12...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
    }
}

/// Failed attempts to sign in, with an API key on the API or on the dashboard's form. A valid key
/// never waits on them: the key is checked first, and only a failure is counted — against the
/// key's id (someone holding a wrong secret for it) and against the client's address when it is
/// known (`TrustedProxies`). Past either limit a failure is answered 429 with `Retry-After`
/// instead of 401, and is no longer logged one by one. Behind a proxy whose address every
/// client shares, the address's count no longer locks out every tenant: their keys are valid.
package final class AuthFailures: Sendable {
    package let proxies: TrustedProxies
    let byAddress = RateLimiter(RateLimit(perSecond: 10))
    let byKey = RateLimiter(RateLimit(perSecond: 1, burst: 10))

    package init(proxies: TrustedProxies) { self.proxies = proxies }

    /// Counts a failure; the seconds the caller is asked to wait (429), or `nil` (401).
    package func failed(keyID: String?, client: String?) -> Int? {
        let waits = [keyID.flatMap { byKey.take("key:" + $0) }, client.flatMap { byAddress.take($0) }]
        return waits.compactMap { $0 }.max()
    }
}
