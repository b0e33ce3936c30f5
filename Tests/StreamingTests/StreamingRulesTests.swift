import Streaming
import Testing

/// The rules a ladder is held to: a good ladder passes clean, and each way of breaking a rule
/// is a finding of the right level.
@Suite("Streaming rules")
struct StreamingRulesTests {
    typealias Rendition = StreamingRules.Rendition

    /// 15.5 s at 30 fps in segments of 6, 6 and 3.5 s.
    static func video(_ name: String, peak: Double = 1_200_000, average: Double = 800_000) -> Rendition {
        var rendition = Rendition(
            name: name,
            isVideo: true,
            segmentDurations: [6, 6, 3.5],
            segmentsStartWithIDR: [true, true, true],
            segmentStarts: [0, 6, 12],
            frameDuration: 1.0 / 30,
            mediaDuration: 15.5,
            targetDuration: 6,
            declaredDuration: 15.5,
            declaredCodecs: "avc1.64001F",
            measuredCodecs: "avc1.64001F"
        )
        rendition.declaredBandwidth = Int(peak * 1.05)
        rendition.measuredPeak = peak
        rendition.declaredAverage = Int(average)
        rendition.measuredAverage = average
        return rendition
    }

    static let audio = Rendition(
        name: "audio",
        isVideo: false,
        segmentDurations: [6.016, 5.995, 3.49],
        segmentsStartWithIDR: [],
        segmentStarts: [0, 6.016, 12.011],
        frameDuration: 1024.0 / 48_000,
        mediaDuration: 15.501,
        targetDuration: 6,
        declaredDuration: 15.501,
        declaredCodecs: "mp4a.40.2",
        measuredCodecs: "mp4a.40.2"
    )

    static func findings(_ renditions: [Rendition], version: Int = 7) -> [StreamingRules.Finding] {
        StreamingRules.check(renditions, playlistVersion: version, hasMap: true)
    }

    @Test("a good ladder: no finding")
    func clean() {
        #expect(Self.findings([Self.video("720p"), Self.video("360p", peak: 400_000), Self.audio]).isEmpty)
    }

    @Test("rule 1: a segment without an IDR, keyframes apart across renditions")
    func keyframes() {
        var late = Self.video("360p")
        late.segmentStarts = [0, 6.002, 12]
        var noIDR = Self.video("720p")
        noIDR.segmentsStartWithIDR = [true, false, true]
        let findings = Self.findings([noIDR, late])
        #expect(findings.map(\.rule) == ["1 idr", "1 aligned"], "\(findings)")
        #expect(findings.allSatisfy { $0.level == .must })
        #expect(findings[1].message.contains("2.0 ms"), "\(findings[1])")
    }

    @Test(
        "rule 2: a segment over the target, targets that differ, EXTINFs that miss the media, renditions that end apart"
    )
    func durations() {
        var long = Self.video("720p")
        long.segmentDurations = [6.5, 5.5, 3.5]
        #expect(Self.findings([long]).map(\.rule) == ["2 target"], "6.5 s rounds to 7, over a 6 s target")
        long.segmentDurations = [6.49, 5.51, 3.5]
        #expect(Self.findings([long]).isEmpty, "6.49 s rounds to 6")
        var other = Self.video("360p")
        other.targetDuration = 7
        #expect(Self.findings([Self.video("720p"), other]).map(\.rule) == ["2 target"])
        var short = Self.video("720p")
        short.declaredDuration = 15.4
        #expect(Self.findings([short]).map(\.rule) == ["2 coverage"])
        var ends = Self.video("360p")
        ends.mediaDuration = 15.4
        ends.declaredDuration = 15.4
        #expect(Self.findings([Self.video("720p"), ends]).map(\.rule) == ["2 coverage"])
    }

    @Test("rule 3: a larger picture declaring less bandwidth than a smaller one is worth knowing")
    func order() {
        var small = Self.video("360p", peak: 400_000)
        small.pixels = 640 * 360
        var large = Self.video("720p", peak: 300_000)
        large.pixels = 1280 * 720
        let findings = Self.findings([small, large, Self.audio])
        #expect(findings.map(\.rule) == ["3 order"] && findings[0].level == .should && findings[0].rendition == "720p")
        large = Self.video("720p", peak: 1_200_000)
        large.pixels = 1280 * 720
        #expect(Self.findings([large, small, Self.audio]).isEmpty)
    }

    @Test("rule 3: the version with a MAP, CODECS, BANDWIDTH below or far above the peak, AVERAGE-BANDWIDTH off")
    func declarations() {
        #expect(Self.findings([Self.video("720p")], version: 5).map(\.rule) == ["3 version"])
        var codecs = Self.video("720p")
        codecs.declaredCodecs = "avc1.640028"
        #expect(Self.findings([codecs]).map(\.rule) == ["3 codecs"])
        var below = Self.video("720p")
        below.declaredBandwidth = 1_100_000
        #expect(Self.findings([below]).map(\.level) == [.must])
        var above = Self.video("720p")
        above.declaredBandwidth = 1_400_000
        above.declaredAverage = 950_000
        let findings = Self.findings([above])
        #expect(findings.map(\.rule) == ["3 bandwidth", "3 average"] && findings.allSatisfy { $0.level == .should })
    }
}
