import Foundation
import Queue
import Testing

extension Checks {
    /// A waiting parent's progress follows its children's heartbeats, weighted by the media
    /// each covers (its range's duration); `JobQuery.parent` lists exactly a parent's children.
    static func graphProgress(_ h: Harness) async throws {
        let parent = try await h.submit("progress parent")
        let claimed = try await h.claim(parent.id)
        let children = [1.0, 3.0].enumerated().map { index, seconds in
            var request = Harness.request("segment \(index)")
            request.range = Job.Range(start: Double(index), duration: seconds)
            return request
        }
        let ids = try #require(try await h.handle(1).fanOut(claimed.lease, children: children))
        let segments = try await h.handle(0).claim(as: Harness.workerB, limit: 2, lease: .seconds(30))
        h.clock.advance(by: .seconds(1))
        let unrelated = try await h.submit("unrelated")
        let listed = try await h.handle(2).jobs(JobQuery(parent: parent.id, limit: 10))
        #expect(Set(listed.map(\.id)) == Set(ids) && listed.count == 2, "the parent's children, nothing else")
        #expect(try await h.handle(2).jobs(JobQuery(parent: unrelated.id, limit: 10)).isEmpty)
        var topLevel = JobQuery(limit: 10)
        topLevel.topLevelOnly = true
        let shown = try await h.handle(3).jobs(topLevel).map(\.id)
        #expect(Set(shown) == [parent.id, unrelated.id], "a listing without the children: \(shown)")
        let long = try #require(segments.first { $0.job.id == ids[1] })
        let short = try #require(segments.first { $0.job.id == ids[0] })
        _ = try await h.handle(0).heartbeat(long.lease, progress: 0.5, tracks: [], extendBy: .seconds(30))
        let halfOfTheLong = try await h.fetch(parent.id, on: 3).progress
        #expect(abs(halfOfTheLong - 0.375) < 1e-9, "0.5 × 3 s of 4 s: \(halfOfTheLong)")
        _ = try await h.handle(1).complete(short.lease, result: .null, tracks: [])
        let withTheShort = try await h.fetch(parent.id, on: 2).progress
        #expect(abs(withTheShort - 0.625) < 1e-9, "1 × 1 s + 0.5 × 3 s of 4 s: \(withTheShort)")
        _ = try await h.handle(0).complete(long.lease, result: .null, tracks: [])
        let join = try await h.claim(parent.id)
        #expect(join.job.children?.completed == 2)
    }
}
