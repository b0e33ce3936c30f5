import Foundation
import Glibc

/// Which network addresses webhooks and remote outputs may reach (SPEC §6, SSRF). By default
/// nothing on this host or its private networks: loopback, private, link-local (cloud
/// metadata is 169.254.169.254), carrier-grade NAT, unspecified, multicast, and their IPv6
/// equivalents, IPv4-mapped ones included.
public struct AddressPolicy: Sendable, Hashable {
    /// Lifts the guard for self-hosted setups and tests (`--allow-private-webhooks`,
    /// `JOBCTL_ALLOW_PRIVATE_WEBHOOKS=1`).
    public var allowPrivate: Bool

    public init(allowPrivate: Bool = false) { self.allowPrivate = allowPrivate }

    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> AddressPolicy {
        AddressPolicy(allowPrivate: ["1", "true", "yes"].contains(environment["JOBCTL_ALLOW_PRIVATE_WEBHOOKS"]?.lowercased() ?? ""))
    }

    /// Why `address` may not be reached, or `nil` when it may.
    public func refusal(for address: IPAddress) -> String? {
        guard !allowPrivate else { return nil }
        return address.restrictedRange
    }

    /// The checks `submit` can make without resolving names: the scheme, credentials aside, an
    /// IP literal in a forbidden range, and `localhost`. The real check happens on connect.
    public func staticRefusal(for text: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            return "only http and https URLs are allowed"
        }
        guard let host = url.host?.lowercased(), !host.isEmpty else { return "the URL has no host" }
        guard !allowPrivate else { return nil }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") { return "\(host) is this machine" }
        if let address = IPAddress(bare), let range = address.restrictedRange { return "\(host) is \(range)" }
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

    /// From a `sockaddr` (what curl is about to connect to).
    public init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
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
            if within(0x0A00_0000, 8) || within(0xAC10_0000, 12) || within(0xC0A8_0000, 16) { return "a private address" }
            if value == 0xA9FE_A9FE { return "the cloud metadata address" }
            if within(0xA9FE_0000, 16) { return "a link-local address" }
            if within(0x6440_0000, 10) { return "a carrier-grade NAT address" }
            if within(0x0000_0000, 8) { return "an unspecified address" }
            if within(0xE000_0000, 4) || value == 0xFFFF_FFFF { return "a multicast or broadcast address" }
            if within(0xF000_0000, 4) { return "a reserved address" }
            return nil
        case .v6(let bytes):
            if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
                let v4 = bytes[12..<16].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                return IPAddress.v4(v4).restrictedRange
            }
            if bytes[0..<15].allSatisfy({ $0 == 0 }) { return bytes[15] == 1 ? "a loopback address" : "an unspecified address" }
            if bytes[0] & 0xFE == 0xFC { return "a private address" }  // fc00::/7, AWS's fd00:ec2::254 metadata too
            if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return "a link-local address" }
            if bytes[0] == 0xFF { return "a multicast address" }
            return nil
        }
    }
}
