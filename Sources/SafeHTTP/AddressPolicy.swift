import Foundation
import Glibc

/// Which network addresses webhooks and remote outputs may reach (docs/spec.md §6, SSRF). By default
/// nothing on this host or its private networks: loopback, private, link-local (cloud
/// metadata is 169.254.169.254), carrier-grade NAT, unspecified, multicast, and their IPv6
/// equivalents, IPv4-mapped ones included.
public struct AddressPolicy: Sendable, Hashable {
    /// Lifts the guard for self-hosted setups and tests (`--allow-private-webhooks`,
    /// `JOBCTL_ALLOW_PRIVATE_WEBHOOKS=1`).
    public var allowPrivate: Bool

    public init(allowPrivate: Bool = false) { self.allowPrivate = allowPrivate }

    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> AddressPolicy {
        AddressPolicy(
            allowPrivate: ["1", "true", "yes"].contains(
                environment["JOBCTL_ALLOW_PRIVATE_WEBHOOKS"]?.lowercased() ?? ""
            )
        )
    }

    /// Why `address` may not be reached, or `nil` when it may.
    public func refusal(for address: IPAddress) -> String? {
        guard !allowPrivate else { return nil }
        return address.restrictedRange
    }

    /// The checks `submit` can make without resolving names: the scheme, credentials aside, an
    /// IP literal in a forbidden range — in any form the C resolver accepts (`0x7f000001`,
    /// `2130706433`, `127.1`, `0177.0.0.1`, an IPv6 zone), and IPv4 embedded in IPv6 — and
    /// `localhost` (with or without its final dot). The real check happens on connect.
    /// A malformed URL (`URLShape`: spaces, a percent-encoded or NUL-bearing host) is refused
    /// first, even when private addresses are allowed. `{name}` (a file set's URL template)
    /// reads as a plain path segment here; `Submission` checks where it stands.
    public func staticRefusal(for text: String) -> String? {
        let shape: URLShape
        switch URLShape.parse(text.replacingOccurrences(of: "{name}", with: "name")) {
        case .success(let parsed): shape = parsed
        case .failure(let error): return error.reason
        }
        let host = shape.host.lowercased()
        guard !allowPrivate else { return nil }
        let name = IPAddress.canonicalHost(host)
        if name == "localhost" || name.hasSuffix(".localhost") { return "\(host) is this machine" }
        if let address = IPAddress(resolverLiteral: name), let range = address.restrictedRange {
            let shown = address.description == name ? host : "\(host) (\(address))"
            return "\(shown) is \(range)"
        }
        return nil
    }
}

/// An IPv4 or IPv6 address.
public enum IPAddress: Sendable, Hashable, CustomStringConvertible {
    case v4(UInt32)
    case v6([UInt8])

    public init?(_ text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            self = .v4(UInt32(bigEndian: v4.s_addr))
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }

    /// Any literal the C resolver takes for an address, as libcurl and FFmpeg would connect to
    /// it: IPv6 (`::127.0.0.1`), and IPv4 in every form `inet_aton` accepts — decimal, octal
    /// and hex parts, and fewer than four of them (`2130706433`, `0177.0.0.1`, `0x7f.1`,
    /// `127.1`, `0`).
    public init?(resolverLiteral text: String) {
        if let parsed = IPAddress(text) {
            self = parsed
            return
        }
        var v4 = in_addr()
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isHexDigit || $0 == "." || $0 == "x" || $0 == "X") }),
            inet_aton(text, &v4) != 0
        else { return nil }
        self = .v4(UInt32(bigEndian: v4.s_addr))
    }

    /// A URL's host as the resolver sees it: brackets and an IPv6 zone (`%25lo`) removed, final
    /// dots dropped (`localhost.` is `localhost`), lowercased.
    public static func canonicalHost(_ host: String) -> String {
        var bare = host.lowercased()
        if bare.hasPrefix("[") && bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        if let zone = bare.firstIndex(of: "%"), bare.contains(":") { bare = String(bare[..<zone]) }
        while bare.hasSuffix(".") { bare.removeLast() }
        return bare
    }

    /// From a `sockaddr` (what curl is about to connect to).
    public init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                $0.pointee.sin_addr.s_addr
            }
            self = .v4(UInt32(bigEndian: address))
        case AF_INET6:
            var address = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self = .v6(withUnsafeBytes(of: &address) { Array($0) })
        default:
            return nil
        }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return [24, 16, 8, 0].map { String((value >> UInt32($0)) & 0xFF) }.joined(separator: ".")
        case .v6(var bytes):
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &bytes, &buffer, socklen_t(buffer.count))
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The forbidden range this address is in, described for a person, or `nil`.
    public var restrictedRange: String? {
        switch self {
        case .v4(let value):
            func within(_ prefix: UInt32, _ bits: UInt32) -> Bool { value >> (32 - bits) == prefix >> (32 - bits) }
            if within(0x7F00_0000, 8) { return "a loopback address" }
            if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) {
                return "a private address"
            }
            if value == 0xA9FE_A9FE { return "the cloud metadata address" }
            if within(0xA9FE_0000, 16) { return "a link-local address" }
            if within(0x6440_0000, 10) { return "a carrier-grade NAT address" }
            if within(0x0000_0000, 8) { return "an unspecified address" }
            if within(0xE000_0000, 4) || value == 0xFFFF_FFFF { return "a multicast or broadcast address" }
            if within(0xF000_0000, 4) { return "a reserved address" }
            return nil
        case .v6(let bytes):
            func v4(at offset: Int) -> IPAddress {
                .v4(bytes[offset..<offset + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            }
            func embedded(_ address: IPAddress, _ kind: String) -> String? {
                address.restrictedRange.map { "\(kind) of \(address), \($0)" }
            }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) {
                return bytes[15] == 1 ? "a loopback address" : "an unspecified address"
            }
            // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks).
            if bytes[0..<10].allSatisfy({ $0 == 0 })
                && ((bytes[10] == 0xFF && bytes[11] == 0xFF) || (bytes[10] == 0 && bytes[11] == 0))
            {
                return v4(at: 12).restrictedRange
            }
            // NAT64 64:ff9b::/96 (a translator reaches the IPv4 inside); the local-use 64:ff9b:1::/48 whole.
            if bytes[0..<4] == [0x00, 0x64, 0xFF, 0x9B] {
                if bytes[4..<12].allSatisfy({ $0 == 0 }) { return embedded(v4(at: 12), "the NAT64 form") }
                if bytes[4] == 0 && bytes[5] == 1 { return "a local-use NAT64 address" }
            }
            // 6to4 2002::/16 carries an IPv4 in its next 32 bits.
            if bytes[0] == 0x20 && bytes[1] == 0x02 { return embedded(v4(at: 2), "the 6to4 form") }
            // Teredo 2001::/32 tunnels to an (obfuscated) IPv4: nothing a webhook needs.
            if bytes[0..<4] == [0x20, 0x01, 0x00, 0x00] { return "a Teredo tunnel address" }
            if bytes[0] & 0xFE == 0xFC { return "a private address" }  // fc00::/7, AWS's fd00:ec2::254 metadata too
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return "a link-local address" }
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0xC0 { return "a site-local address" }
            if bytes[0] == 0xFF { return "a multicast address" }
            return nil
        }
    }
}
