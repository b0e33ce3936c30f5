import JobctlCore
import Testing

@Suite("Durations in flags and ?wait=")
struct DurationTextTests {
    @Test("units, bare seconds, and what is refused")
    func parsing() {
        #expect(parseDuration("30s") == .seconds(30))
        #expect(parseDuration("1500ms") == .milliseconds(1500))
        #expect(parseDuration("2m") == .seconds(120))
        #expect(parseDuration("1h") == .seconds(3600))
        #expect(parseDuration(" 90 ") == .seconds(90))
        #expect(parseDuration("0.5s") == .milliseconds(500))
        for refused in ["", "s", "-1s", "abc", "inf", "nan", "1e400", "1x"] {
            #expect(parseDuration(refused) == nil, "\(refused)")
        }
    }

    @Test("a huge number is refused, not a crash (found by schemathesis: ?wait=4084410497952903323145ms)")
    func hugeValues() {
        #expect(parseDuration("4084410497952903323145ms") == nil)
        #expect(parseDuration("99999999999999999999h") == nil)
        #expect(parseDuration("1000000000s") == .seconds(1_000_000_000))
        #expect(parseDuration("1000000001s") == nil)
    }
}
