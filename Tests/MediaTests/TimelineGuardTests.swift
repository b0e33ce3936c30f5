import Testing

@testable import Media

/// The timeline guard's rules, one by one, without FFmpeg (docs/spec.md §7: filler bounded by where the
/// media really is). Times in seconds here; the guard counts microseconds.
@Suite("Timeline guard")
struct TimelineGuardTests {
    typealias Guard = TimelineGuard<String>
    static let second: Int64 = 1_000_000

    /// Feeds (stream, start s, duration s) packets named `"s@t"`; returns what was routed, in order.
    static func feed(_ timeline: inout Guard, _ packets: [(Int, Double, Double)]) throws(MediaError) -> [String] {
        var routed: [String] = []
        for (stream, start, duration) in packets {
            let name = "\(stream)@\(start)"
            let from = Int64(start * 1e6)
            routed += try timeline.admit(
                name,
                stream: stream,
                start: from,
                end: from + Int64(duration * 1e6),
                bytes: 100
            ).map(\.item)
        }
        return routed
    }

    @Test func interleavedTracksPassStraightThrough() throws {
        var timeline = Guard(streams: [0, 1])
        let packets = (0..<50).flatMap { n in [(0, Double(n) * 0.04, 0.04), (1, Double(n) * 0.04 + 0.01, 0.023)] }
        let routed = try Self.feed(&timeline, packets)
        #expect(routed == packets.map { "\($0.0)@\($0.1)" })
        try timeline.finish()
    }

    @Test func aTrackStartingWithinTheSlackIsNotHeld() throws {
        var timeline = Guard(streams: [0, 1])
        #expect(
            try Self.feed(&timeline, [(0, 0, 0.04), (1, 9.5, 0.02), (0, 0.04, 0.04)]) == ["0@0.0", "1@9.5", "0@0.04"]
        )
    }

    @Test func aTrackStartingAfterTheOthersEndFails() throws {
        var timeline = Guard(streams: [0, 1])
        let routed = try Self.feed(
            &timeline,
            (0..<50).map { (0, Double($0) * 0.04, 0.04) } + [(1, 3600, 0.02), (1, 3600.02, 0.02)]
        )
        #expect(routed.count == 50, "the late track's packets are held, not routed")
        #expect(timeline.isParked(1))
        #expect { try timeline.finish() } throws: { error in
            let error = error as! MediaError
            return error.code == .decodeFailed && error.message.contains("track 1 starts at 3600s")
                && error.message.contains("ends (2s)")
        }
    }

    @Test func aLateTrackIsReleasedInOrderWhenTheOthersCatchUp() throws {
        var timeline = Guard(streams: [0, 1])
        // Audio from 30 s arrives early in the file; the video reaches 20 s a little later.
        var routed = try Self.feed(&timeline, [(0, 0, 1), (1, 30, 1), (1, 31, 1), (0, 1, 1)])
        #expect(routed == ["0@0.0", "0@1.0"])
        routed = try Self.feed(&timeline, [(0, 20, 1)])
        #expect(routed == ["0@20.0", "1@30.0", "1@31.0"])
        #expect(!timeline.isParked(1))
        try timeline.finish()
    }

    /// Both tracks start a little late (a data stream set the file's start earlier): fine. Both
    /// hours late: refused like one late track, not hours of filler for both.
    @Test func tracksThatAreLateTogether() throws {
        var timeline = Guard(streams: [0, 1])
        let routed = try Self.feed(&timeline, [(0, 30, 0.04), (1, 30.02, 0.02), (0, 30.04, 0.04)])
        #expect(routed == ["0@30.0", "1@30.02", "0@30.04"])
        try timeline.finish()

        var late = Guard(streams: [0, 1])
        #expect(try Self.feed(&late, [(0, 42_600, 0.04), (1, 42_600.02, 0.02), (0, 42_600.04, 0.04)]).isEmpty)
        #expect { try late.finish() } throws: { ($0 as! MediaError).message.contains("more than 300s after the start") }
    }

    /// A timestamp too large for the timeline (it overflowed when rescaled) is as far away as
    /// it gets: a jump, never a trap.
    @Test func timestampsThatDoNotFitAreFarAway() throws {
        #expect(Guard.span(start: Int64.min, duration: 40_000, origin: 1_000).start == Int64.max)
        #expect(Guard.span(start: Int64.max - 10, duration: Int64.max, origin: -5).end == Int64.max)
        #expect(Guard.span(start: Int64.min + 1, duration: 0, origin: 1_000).start == Int64.min)
        let plain = Guard.span(start: 5_000_000, duration: 40_000, origin: 1_000_000)
        #expect(plain.start == 4_000_000 && plain.end == 4_040_000)
        var timeline = Guard(streams: [0], rules: .init(maxDuration: 60 * Self.second))
        _ = try Self.feed(&timeline, [(0, 0, 0.04)])
        let far = Guard.span(start: Int64.min, duration: 0, origin: 0)
        #expect(
            try timeline.admit("far", stream: 0, start: far.start, end: far.end, bytes: 1).isEmpty,
            "dropped, not routed"
        )
    }

    /// Many late tracks share one parking budget.
    @Test func parkingIsBoundedForTheWholeExport() throws {
        var timeline = Guard(streams: [0, 1, 2, 3], rules: .init(parkingPackets: 10))
        _ = try Self.feed(&timeline, [(0, 0, 1)])
        var late: [(Int, Double, Double)] = []
        for n in 0..<10 {
            let stream = 1 + n % 3
            late.append((stream, 1000 * Double(stream) + Double(n), 0.02))
        }
        #expect(try Self.feed(&timeline, late).isEmpty)
        #expect { try Self.feed(&timeline, [(3, 5000, 0.02)]) } throws: { ($0 as! MediaError).code == .decodeFailed }
    }

    @Test func theOnlyTrackMayStartUpToTheJumpLimitLate() throws {
        var ok = Guard(streams: [1])
        #expect(try Self.feed(&ok, [(1, 30, 0.02)]) == ["1@30.0"])
        var late = Guard(streams: [1])
        #expect(try Self.feed(&late, [(1, 3600, 0.02)]).isEmpty)
        #expect { try late.finish() } throws: { ($0 as! MediaError).message.contains("more than 300s after the start") }
    }

    @Test func aJumpPastAllMediaIsDroppedAndARunOfThemFails() throws {
        var timeline = Guard(streams: [0, 1])
        _ = try Self.feed(&timeline, [(0, 0, 0.04), (1, 0, 0.02)])
        // One corrupted timestamp: dropped, and the stream goes on.
        #expect(try Self.feed(&timeline, [(0, 7200, 0.04), (0, 0.04, 0.04)]) == ["0@0.04"])
        // A slide held for 4 minutes is not a jump.
        #expect(try Self.feed(&timeline, [(0, 240, 0.04)]) == ["0@240.0"])
        // 100 in a row: the file is damaged.
        let run = (0..<99).map { (0, 9000 + Double($0), 0.04) }
        #expect(try Self.feed(&timeline, run).isEmpty)
        #expect { try Self.feed(&timeline, [(0, 9999, 0.04)]) } throws: { error in
            let error = error as! MediaError
            return error.code == .decodeFailed && error.message.contains("timestamps jump")
        }
    }

    /// With a declared duration, gaps inside it are the file's (up to the jump limit); past it,
    /// media is contiguous.
    @Test func pastTheDeclaredEndMediaMustBeContiguous() throws {
        var timeline = Guard(streams: [0, 1], rules: .init(declaredEnd: 600 * Self.second))
        _ = try Self.feed(&timeline, [(0, 0, 0.04), (1, 0, 0.02)])
        // A slide shown for 4 minutes, inside the declared 10: kept; a jump of 6 is not.
        #expect(try Self.feed(&timeline, [(0, 240, 0.04)]) == ["0@240.0"])
        #expect(try Self.feed(&timeline, [(0, 599, 0.04)]).isEmpty)
        // Reading past the declared end without holes (an estimate was short): kept.
        #expect(
            try Self.feed(&timeline, [(0, 480, 60), (0, 540, 60.5), (0, 600.5, 0.5), (0, 601.5, 0.5)]) == [
                "0@480.0", "0@540.0", "0@600.5", "0@601.5",
            ]
        )
        // 15 s past the declared end and the media: a damaged timestamp.
        #expect(try Self.feed(&timeline, [(1, 617, 0.02)]).isEmpty)
    }

    @Test func theTimelineHasACeiling() throws {
        var timeline = Guard(streams: [0], rules: .init(maxDuration: 60 * Self.second))
        _ = try Self.feed(&timeline, [(0, 0, 1), (0, 58, 1)])
        #expect { try Self.feed(&timeline, [(0, 59.5, 1)]) } throws: { error in
            let error = error as! MediaError
            return error.code == .limitExceeded && error.message.contains("60s")
                && error.message.contains("--max-duration")
        }
    }

    @Test func parkingIsBounded() throws {
        var timeline = Guard(streams: [0, 1], rules: .init(parkingPackets: 10))
        _ = try Self.feed(&timeline, [(0, 0, 1)])
        #expect(try Self.feed(&timeline, (0..<10).map { (1, 100 + Double($0), 0.02) }).isEmpty)
        #expect { try Self.feed(&timeline, [(1, 200, 0.02)]) } throws: { ($0 as! MediaError).code == .decodeFailed }
    }

    @Test func streamsItDoesNotGuardPass() throws {
        var timeline = Guard(streams: [0])
        #expect(try Self.feed(&timeline, [(0, 0, 1), (5, 99999, 1)]) == ["0@0.0", "5@99999.0"])
    }
}
