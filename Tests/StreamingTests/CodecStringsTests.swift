import Streaming
import Testing

/// `CODECS` strings from configuration records, against values players and packagers use.
@Suite("Codec strings")
struct CodecStringsTests {
    @Test("avc1 from avcC and from an SPS: High 4.0, Baseline 3.0 constrained, Main 3.1")
    func avc() throws {
        #expect(try CodecStrings.avc(fromAVCC: [1, 0x64, 0x00, 0x28, 0xFF]) == "avc1.640028")
        #expect(try CodecStrings.avc(fromAVCC: [1, 0x42, 0xC0, 0x1E]) == "avc1.42C01E")
        #expect(try CodecStrings.avc(fromSPS: [0, 0, 0, 1, 0x67, 0x4D, 0x40, 0x1F, 0x96]) == "avc1.4D401F")
        #expect(try CodecStrings.avc(fromSPS: [0x67, 0x64, 0x00, 0x1F]) == "avc1.64001F")
        #expect(throws: CodecStrings.Problem.tooShort(record: "avcC", bytes: 3)) {
            try CodecStrings.avc(fromAVCC: [1, 0x64, 0x00])
        }
        #expect(throws: CodecStrings.Problem.unknownVersion(record: "avcC", version: 0)) {
            try CodecStrings.avc(fromAVCC: [0, 0x64, 0x00, 0x28])
        }
    }

    @Test(
        "hvc1 from hvcC: Main and Main 10 at Main tier, a High-tier level, a profile space, trailing zero bytes dropped"
    )
    func hevc() throws {
        // Main profile (1), compatible with Main and Main 10 (flags 0x60000000, reversed 0x6),
        // level 4.0 (120), constraint flags 0x90 then zeros: what x265 writes for 1080p.
        let main: [UInt8] = [1, 0x01, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 120, 0xF0]
        #expect(try CodecStrings.hevc(fromHVCC: main) == "hvc1.1.6.L120.90")
        // Main 10 (2), compatible with Main 10 only (0x20000000 → 0x4), level 3.1 (93), 0xB0.
        let main10: [UInt8] = [1, 0x02, 0x20, 0, 0, 0, 0xB0, 0, 0, 0, 0, 0, 93]
        #expect(try CodecStrings.hevc(fromHVCC: main10) == "hvc1.2.4.L93.B0")
        // High tier, level 5.1 (153), two constraint bytes.
        let high: [UInt8] = [1, 0x21, 0x40, 0, 0, 0, 0x90, 0x10, 0, 0, 0, 0, 153]
        #expect(try CodecStrings.hevc(fromHVCC: high) == "hvc1.1.2.H153.90.10")
        // Profile space 1 (A), and the sample entry as given.
        let spaced: [UInt8] = [1, 0x41, 0x60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 90]
        #expect(try CodecStrings.hevc(fromHVCC: spaced, sampleEntry: "hev1") == "hev1.A1.6.L90")
        #expect(throws: CodecStrings.Problem.tooShort(record: "hvcC", bytes: 12)) {
            try CodecStrings.hevc(fromHVCC: Array(main.prefix(12)))
        }
    }
}
