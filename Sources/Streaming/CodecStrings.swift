/// The `CODECS` values of an HLS master playlist and a DASH MPD (RFC 6381), read from the
/// bitstream's own configuration records rather than assumed from the preset (issue 29): what
/// the encoder wrote is what a player is told.
public enum CodecStrings {
    public enum Problem: Error, Equatable, CustomStringConvertible {
        case tooShort(record: String, bytes: Int)
        case unknownVersion(record: String, version: UInt8)

        public var description: String {
            switch self {
            case .tooShort(let record, let bytes):
                "the \(record) record is \(bytes) bytes, too short to describe a stream"
            case .unknownVersion(let record, let version): "the \(record) record has version \(version), not 1"
            }
        }
    }

    /// `avc1.PPCCLL` from an `avcC` record (ISO/IEC 14496-15 §5.3.3.1): profile, constraint
    /// flags and level, two hex digits each.
    public static func avc(fromAVCC record: [UInt8]) throws(Problem) -> String {
        guard record.count >= 4 else { throw .tooShort(record: "avcC", bytes: record.count) }
        guard record[0] == 1 else { throw .unknownVersion(record: "avcC", version: record[0]) }
        return "avc1." + record[1...3].map(hex2).joined()
    }

    /// `avc1.PPCCLL` from a sequence parameter set NAL unit (with or without its start code):
    /// the three bytes after the NAL header.
    public static func avc(fromSPS nal: [UInt8]) throws(Problem) -> String {
        var bytes = nal[...]
        for prefix in [[0, 0, 0, 1], [0, 0, 1]] as [[UInt8]] where bytes.starts(with: prefix) {
            bytes = bytes.dropFirst(prefix.count)
            break
        }
        guard bytes.count >= 4 else { throw .tooShort(record: "SPS", bytes: bytes.count) }
        return "avc1." + bytes.dropFirst().prefix(3).map(hex2).joined()
    }

    /// `hvc1.…` from an `hvcC` record (ISO/IEC 14496-15 §8.3.3.1 and Annex E): the profile
    /// space (none, A, B or C) and profile, the compatibility flags in reverse bit order as
    /// hex, the tier (L or H) and level, then the constraint flags' bytes with trailing zero
    /// bytes left out. Main profile, level 4.0: `hvc1.1.6.L120.90`.
    public static func hevc(fromHVCC record: [UInt8], sampleEntry: String = "hvc1") throws(Problem) -> String {
        guard record.count >= 13 else { throw .tooShort(record: "hvcC", bytes: record.count) }
        guard record[0] == 1 else { throw .unknownVersion(record: "hvcC", version: record[0]) }
        let space = ["", "A", "B", "C"][Int(record[1] >> 6)]
        let tier = record[1] & 0x20 != 0 ? "H" : "L"
        let profile = record[1] & 0x1F
        let compatibility = record[2...5].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var constraints = Array(record[6...11])
        while constraints.last == 0 { constraints.removeLast() }
        var parts = [
            sampleEntry, "\(space)\(profile)", String(reversedBits(compatibility), radix: 16, uppercase: true),
            "\(tier)\(record[12])",
        ]
        parts += constraints.map { String($0, radix: 16, uppercase: true) }
        return parts.joined(separator: ".")
    }

    /// AAC-LC, the one audio codec of the ladder.
    public static let aacLC = "mp4a.40.2"

    static func hex2(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }

    static func reversedBits(_ value: UInt32) -> UInt32 {
        var value = value
        var reversed: UInt32 = 0
        for _ in 0..<32 {
            reversed = reversed << 1 | (value & 1)
            value >>= 1
        }
        return reversed
    }
}
