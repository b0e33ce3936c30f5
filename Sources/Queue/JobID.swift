import Foundation

/// A job's id: a UUIDv7 (RFC 9562) in lowercase text, so ids sort by creation time.
public struct JobID: Sendable, Hashable, Codable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue.lowercased() }
    public init(stringLiteral value: String) { self.init(value) }

    public init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
    public static func < (lhs: JobID, rhs: JobID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// A new UUIDv7: 48 bits of Unix milliseconds, version 7, 74 random bits.
    public static func make(at date: Date = Date()) -> JobID {
        var bytes = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in 6..<16 { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        // 8-4-4-4-12 lowercase hex digits, written directly (String(format:) per byte cost
        // more than the rest of a submit's client work).
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return JobID(String(decoding: text, as: UTF8.self))
    }

    /// `count` ids made at `date`, in ascending order: a fan-out's children, so that claim
    /// order (which ends on the id) takes a parent's children in their index order.
    public static func makeAscending(_ count: Int, at date: Date = Date()) -> [JobID] {
        (0..<count).map { _ in make(at: date).rawValue }.sorted().map { JobID($0) }
    }

    /// Whether this looks like a job id (a UUID); commands check before asking the store.
    public var isWellFormed: Bool { UUID(uuidString: rawValue) != nil }
}
