/// An address and a prefix length: `10.0.0.0/8`, `::1/128`, or a lone address (all its bits).
/// What `jobctl serve --trusted-proxy` takes.
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    public let address: IPAddress
    public let bits: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        let width = address.width
        if parts.count == 2 {
            guard let bits = Int(parts[1]), (0...width).contains(bits), parts[1].allSatisfy(\.isASCII) else {
                return nil
            }
            self.bits = bits
        } else {
            bits = width
        }
        self.address = address
    }

    /// Whether `candidate` is in the range (an IPv4 address is never in an IPv6 range, nor the reverse).
    public func contains(_ candidate: IPAddress) -> Bool {
        let (ours, theirs) = (address.bytes, candidate.bytes)
        guard ours.count == theirs.count else { return false }
        var remaining = bits
        for (a, b) in zip(ours, theirs) where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - take))
            guard a & mask == b & mask else { return false }
            remaining -= take
        }
        return true
    }

    public var description: String { "\(address)/\(bits)" }
}

extension IPAddress {
    /// The address's bits: 32 or 128.
    var width: Int {
        switch self {
        case .v4: 32
        case .v6: 128
        }
    }

    /// The address in network order.
    var bytes: [UInt8] {
        switch self {
        case .v4(let value): [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> UInt32($0)) }
        case .v6(let bytes): bytes
        }
    }
}
