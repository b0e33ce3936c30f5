import Media
import Testing

/// Where a split export is cut (issue 27), before any of it encodes: pure, over constant and
/// variable frame rates.
@Suite("Split plans")
struct SplitPlanTests {
    /// Frames at `fps` from `start` for `seconds`.
    static func frames(fps: Int64, seconds: Int64, start: Int64 = 0) -> [Int64] {
        (0..<(fps * seconds)).map { start + $0 * 1_000_000 / fps }
    }

    /// The properties every plan has: contiguous whole frames covering the range, in order, no
    /// empty segment, each starting at its first frame's time.
    static func checkShape(_ plan: SplitPlan, _ times: [Int64], end: Int64) {
        #expect(plan.segments.first?.frames.lowerBound == 0)
        #expect(plan.segments.last?.frames.upperBound == times.count)
        #expect(plan.segments.last?.end == end)
        for (index, segment) in plan.segments.enumerated() {
            #expect(segment.index == index && !segment.frames.isEmpty, "\(segment)")
            #expect(segment.start == times[segment.frames.lowerBound])
            if index + 1 < plan.segments.count {
                let next = plan.segments[index + 1]
                #expect(next.frames.lowerBound == segment.frames.upperBound && next.start == segment.end)
            }
        }
        #expect(plan.segments.map(\.frameCount).reduce(0, +) == times.count)
    }

    @Test("30 fps, 10 s, 4 s segments on a 2 s keyframe grid: cuts at 4 s and 8 s, 120 + 120 + 60 frames")
    func constantRate() throws {
        let times = Self.frames(fps: 30, seconds: 10, start: 3_600_000_000)
        let plan = try SplitPlan.make(
            frameTimes: times,
            rangeEnd: 3_610_000_000,
            segmentLength: 4_000_000,
            keyframeInterval: 2_000_000
        )
        Self.checkShape(plan, times, end: 3_610_000_000)
        #expect(plan.segments.map(\.frameCount) == [120, 120, 60])
        #expect(plan.segments.map(\.start) == [3_600_000_000, 3_604_000_000, 3_608_000_000])
    }

    @Test("a segment length is rounded to whole keyframe intervals; a short tail joins the segment before")
    func roundingAndTail() throws {
        let times = Self.frames(fps: 25, seconds: 9)
        // 5 s on a 2 s grid is 6 s: a cut at 6 s leaves 3 s, half a segment: kept.
        let plan = try SplitPlan.make(
            frameTimes: times,
            rangeEnd: 9_000_000,
            segmentLength: 5_000_000,
            keyframeInterval: 2_000_000
        )
        #expect(plan.segments.map(\.start) == [0, 6_000_000])
        // 4 s segments: cuts at 4 s and 8 s would leave 1 s, under half: it joins the second.
        let merged = try SplitPlan.make(
            frameTimes: times,
            rangeEnd: 9_000_000,
            segmentLength: 4_000_000,
            keyframeInterval: 2_000_000
        )
        #expect(merged.segments.map(\.start) == [0, 4_000_000] && merged.segments.last?.frameCount == 125)
        // Shorter than one segment: one segment.
        let whole = try SplitPlan.make(
            frameTimes: times,
            rangeEnd: 9_000_000,
            segmentLength: 60_000_000,
            keyframeInterval: 2_000_000
        )
        #expect(whole.segments.count == 1 && whole.segments[0].frameCount == 225)
    }

    @Test("a scene cut within half a keyframe interval moves the cut; one further away does not")
    func sceneCuts() throws {
        let times = Self.frames(fps: 30, seconds: 12)
        let plan = try SplitPlan.make(
            frameTimes: times,
            rangeEnd: 12_000_000,
            segmentLength: 4_000_000,
            keyframeInterval: 2_000_000,
            sceneCuts: [4_500_000, 9_500_000, 2_000_000]
        )
        // 4 s → the cut at 4.5 s (within 1 s); 8 s: 9.5 s is 1.5 s away, so 8 s stays.
        #expect(plan.segments.map(\.start) == [0, 4_500_000, 8_000_000])
        Self.checkShape(plan, times, end: 12_000_000)
    }

    @Test(
        "variable frame rate: every cut is the first frame at or after its grid time; the shape holds for random inputs"
    )
    func variableRate() throws {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            seed &+= 0x9E37_79B9_7F4A_7C15
            var z = seed
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        for _ in 0..<300 {
            var times: [Int64] = []
            var time = Int64(next() % 5_000_000)
            for _ in 0..<(1 + Int(next() % 600)) {
                times.append(time)
                time += 1 + Int64(next() % 100_000)  // gaps from 1 µs to 0.1 s
            }
            let end = time
            let length = 1_000_000 + Int64(next() % 8_000_000)
            let interval = 250_000 + Int64(next() % 2_000_000)
            let cuts = (0..<Int(next() % 5)).map { _ in times[0] + Int64(next() % UInt64(end - times[0])) }
            let plan = try SplitPlan.make(
                frameTimes: times,
                rangeEnd: end,
                segmentLength: length,
                keyframeInterval: interval,
                sceneCuts: cuts
            )
            Self.checkShape(plan, times, end: end)
            for segment in plan.segments.dropFirst() {
                let previous = times[segment.frames.lowerBound - 1]
                #expect(previous < segment.start, "a cut is the first frame at or after its time")
            }
        }
    }

    @Test("frames that are not in order, none, or a zero length are refused")
    func refusals() {
        #expect(throws: MediaError.self) {
            try SplitPlan.make(frameTimes: [], rangeEnd: 1, segmentLength: 1, keyframeInterval: 1)
        }
        #expect(throws: MediaError.self) {
            try SplitPlan.make(frameTimes: [0, 5, 5], rangeEnd: 10, segmentLength: 1, keyframeInterval: 1)
        }
        #expect(throws: MediaError.self) {
            try SplitPlan.make(frameTimes: [0, 5], rangeEnd: 10, segmentLength: 0, keyframeInterval: 1)
        }
        #expect(throws: MediaError.self) {
            try SplitPlan.make(frameTimes: [0, 5], rangeEnd: 5, segmentLength: 1, keyframeInterval: 1)
        }
    }

    @Test("--split: auto splits long inputs with more than one worker, off never, a duration always")
    func splitRequest() throws {
        #expect(try SplitRequest(parsing: "auto") == .auto && (try SplitRequest(parsing: "OFF")) == .off)
        #expect(try SplitRequest(parsing: "4s") == .segments(4_000_000))
        #expect(try SplitRequest(parsing: "1:00") == .segments(60_000_000))
        for bad in ["0.5s", "never", "-4s", ""] {
            #expect(throws: MediaError.self, "\(bad)") { try SplitRequest(parsing: bad) }
        }
        let minute: Int64 = 60_000_000
        #expect(SplitRequest.auto.segmentLength(duration: 2 * minute + 1, aliveWorkers: 2) == minute)
        #expect(SplitRequest.auto.segmentLength(duration: 2 * minute, aliveWorkers: 2) == nil, "not longer than twice")
        #expect(SplitRequest.auto.segmentLength(duration: 40 * minute, aliveWorkers: 1) == nil, "one worker")
        #expect(SplitRequest.off.segmentLength(duration: 40 * minute, aliveWorkers: 8) == nil)
        #expect(SplitRequest.segments(4_000_000).segmentLength(duration: 1_000_000, aliveWorkers: 1) == 4_000_000)
    }
}
