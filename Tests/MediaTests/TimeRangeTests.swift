import Foundation
import Media
import Testing

@Suite("Time ranges (docs/spec.md §2)")
struct TimeRangeTests {
    @Test(
        arguments: [
            ("1s+3s", 1_000_000, 3_000_000),
            ("1+3", 1_000_000, 3_000_000),
            ("1.5s+2.25s", 1_500_000, 2_250_000),
            ("1500ms+500ms", 1_500_000, 500_000),
            ("1s-4s", 1_000_000, 3_000_000),
            ("0-0.040", 0, 40_000),
            ("1:02.5+1", 62_500_000, 1_000_000),
            ("00:01:02.500-00:01:10", 62_500_000, 7_500_000),
            ("1:00:00+0:30", 3_600_000_000, 30_000_000),
            ("0.1+0.2", 100_000, 200_000),
            ("0.0000015+1", 2, 1_000_000),
            (" 2s + 1s ", 2_000_000, 1_000_000),
        ] as [(String, Int64, Int64)]
    )
    func parsesStartAndDuration(text: String, start: Int64, duration: Int64) throws {
        let range = try TimeRange(parsing: text)
        #expect(range.start == start)
        #expect(range.duration == duration)
    }

    @Test(arguments: [("90", 90_000_000), ("1:30", 90_000_000), ("250ms", 250_000), ("0", 0)] as [(String, Int64)])
    func startAloneRunsToTheEnd(text: String, start: Int64) throws {
        let range = try TimeRange(parsing: text)
        #expect(range.start == start)
        #expect(range.duration == nil)
    }

    @Test(arguments: [
        "", "abc", "-1s+3s", "1s+-3s", "1s+0s", "4s-1s", "3s-3s", "1s+", "+3s", "1:75", "1:2:3:4", "1..5", "1.5.2",
        "1e3", "1s+3x", "0x10", "1:60:00", "1.+2", "ms", "s",
        // Clock times too large to hold in microseconds: refused, never a trap (a 14-digit
        // M:SS once crashed the API server that parsed it).
        "99999999999999:00", "1000000000:00", "99999999999999:00+1s", "1:99999999999999:00", "٣:00",
    ])
    func rejectsMalformedRanges(text: String) {
        #expect(throws: TimeRangeParseError.self) { try TimeRange(parsing: text) }
    }

    @Test func parseErrorsExplainTheGrammar() {
        do {
            _ = try TimeRange(parsing: "4s-1s")
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("the end must be after the start"))
            #expect(error.description.contains("START+DURATION"))
        }
    }

    @Test func intersectsWithTheAssetDuration() throws {
        let asset: Int64 = 10_000_000
        func resolve(_ text: String, _ duration: Int64?) throws -> ResolvedRange {
            try TimeRange(parsing: text).resolved(assetDuration: duration, assetName: "a")
        }
        #expect(
            try resolve("1s+3s", asset) == ResolvedRange(start: 1_000_000, end: 4_000_000, expectedDuration: 3_000_000)
        )
        // Reaching the asset's end means reading to the end of the input (its duration is an estimate).
        #expect(try resolve("8s+5s", asset) == ResolvedRange(start: 8_000_000, end: nil, expectedDuration: 2_000_000))
        #expect(try resolve("8s+2s", asset) == ResolvedRange(start: 8_000_000, end: nil, expectedDuration: 2_000_000))
        #expect(try resolve("8s", asset) == ResolvedRange(start: 8_000_000, end: nil, expectedDuration: 2_000_000))
        #expect(try resolve("8s", nil) == ResolvedRange(start: 8_000_000, end: nil, expectedDuration: nil))
        #expect(
            try resolve("8s+1s", nil) == ResolvedRange(start: 8_000_000, end: 9_000_000, expectedDuration: 1_000_000)
        )
        for outside in ["10s+1s", "12s-13s", "11"] {
            #expect {
                try TimeRange(parsing: outside).resolved(assetDuration: asset, assetName: "talk.mov")
            } throws: { error in
                (error as? MediaError)?.code == .rangeOutOfBounds && "\(error)".contains("talk.mov lasts 10.000s")
            }
        }
    }

    @Test func describesItselfInTheGrammar() throws {
        #expect(try TimeRange(parsing: "1.5s+3s").description == "1.5s+3s")
        #expect(try TimeRange(parsing: "90").description == "90s-end")
    }

    /// A range travels as seconds (a Double: the job JSON, the SQLite REAL and PostgreSQL DOUBLE
    /// PRECISION columns) between the submitter's parse and the worker, in whole microseconds at
    /// both ends. The round trip is exact for every value a range may hold (up to 1e9 s, i.e.
    /// 1e15 µs, below 2^53): µs → µs / 1e6 → JSON text → × 1e6 rounded gives the µs back.
    @Test("microseconds survive the seconds form exactly, through JSON too")
    func secondsRoundTripIsExact() throws {
        var generator = SystemRandomNumberGenerator()
        let edges: [Int64] = [
            0, 1, 3, 999_999, 1_000_001, 33_366, 1_234_567_891, 999_999_999_999_999, 1_000_000_000_000_000,
        ]
        let values = edges + (0..<2000).map { _ in Int64.random(in: 0...1_000_000_000_000_000, using: &generator) }
        for microseconds in values {
            let seconds = Double(microseconds) / 1e6
            let viaJSON = try JSONDecoder().decode(Double.self, from: JSONEncoder().encode(seconds))
            for form in [seconds, viaJSON] {
                let range = try #require(TimeRange(seconds: form, duration: microseconds > 0 ? form : nil))
                #expect(range.start == microseconds, "\(microseconds) µs came back as \(range.start)")
                if microseconds > 0 { #expect(range.duration == microseconds) }
            }
        }
    }
}
