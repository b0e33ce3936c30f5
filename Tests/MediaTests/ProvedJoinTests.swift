import Foundation
import Testing

@testable import Media

/// The join loop both split drivers run (`ProvedJoin`): a refused segment is encoded again
/// and the join tried again, up to `SplitExport.maximumReencodes` new encodes of one segment.
@Suite("Proved join")
struct ProvedJoinTests {
    static func parts(_ count: Int) -> [SegmentJoin.Segment] {
        (0..<count).map { index in
            SegmentJoin.Segment(
                path: "/scratch/\(index).mp4",
                frames: 50,
                start: Int64(index) * 2_000_000,
                end: Int64(index + 1) * 2_000_000,
                from: Int64(index) * 2_000_000,
                origin: Int64(index) * 2_000_000
            )
        }
    }

    @Test("a segment refused twice is encoded again twice, with its new frame count, then joined")
    func refusedThenJoined() async throws {
        var proved = ProvedJoin(Self.parts(3))
        var joins = 0
        var remade: [Int] = []
        let joined = try await proved.run(
            isCancelled: { false },
            join: { parts in
                joins += 1
                if joins <= 2 { throw SegmentJoin.Mismatch(segment: 1, reason: "49 frames, not 50") }
                return parts.map(\.frames)
            },
            remake: { segment in
                remade.append(segment)
                return 49 + remade.count
            }
        )
        #expect(joins == 3 && remade == [1, 1])
        #expect(joined == [50, 51, 50], "the join saw the new frame count")
        #expect(proved.reencodes == [0, 2, 0])
    }

    @Test("past the new encodes allowed, the segment is refused for good, naming it")
    func refusedForGood() async throws {
        var proved = ProvedJoin(Self.parts(2), reencodes: [0, 1])
        var remakes = 0
        await #expect {
            _ = try await proved.run(
                isCancelled: { false },
                join: { _ -> Int in
                    throw SegmentJoin.Mismatch(segment: 1, reason: "a timestamp out of place")
                },
                remake: { _ in
                    remakes += 1
                    return nil
                }
            )
        } throws: { error in
            let refused = error as? ProvedJoin.Refused
            return refused?.mismatch.segment == 1
                && "\(error)".contains("segment 1: a timestamp out of place, after \(SplitExport.maximumReencodes)")
        }
        // One new encode was counted before the loop (a damaged part): two more are allowed.
        #expect(remakes == SplitExport.maximumReencodes - 1)
        #expect(proved.reencodes == [0, SplitExport.maximumReencodes + 1])
    }

    @Test("a cancelled join stops before joining again")
    func cancelled() async throws {
        var proved = ProvedJoin(Self.parts(1))
        var joins = 0
        await #expect(throws: MediaError.self) {
            _ = try await proved.run(
                isCancelled: { joins > 0 },
                join: { _ -> Int in
                    joins += 1
                    throw SegmentJoin.Mismatch(segment: 0, reason: "short")
                },
                remake: { _ in
                    nil
                }
            )
        }
        #expect(joins == 1)
    }
}
