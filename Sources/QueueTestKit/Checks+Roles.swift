import Foundation
import Queue
import Testing

// Conformance checks: a job's role in its graph (issue 43).
extension Checks {
    /// A job's role is stored and read back as it was given, by every store and on every read
    /// path (a fetch, a listing, a claim): standalone, a parent with a split or with outputs;
    /// a fan-out's children are children whatever their requests said, each with the part its
    /// request gave it (or none), and their parent keeps its plan.
    static func roles(_ h: Harness) async throws {
        var split = Harness.request("split parent")
        split.role = .parent(.split(.string("30s")))
        var outputs = Harness.request("outputs parent")
        let plan: JSONValue = .array([.object(["kind": .string("thumbnails"), "output": .string("/out/t")])])
        outputs.role = .parent(.outputs(plan))
        let splitJob = try await h.handle(1).submit(split).job
        h.clock.advance(by: .seconds(1))  // claimed first: the oldest
        let outputsJob = try await h.handle(2).submit(outputs).job
        let standalone = try await h.submit("by itself")
        #expect(standalone.role == .standalone)
        #expect(splitJob.role == split.role, "submit returns the role it stored")
        #expect(try await h.fetch(splitJob.id, on: 3).role == split.role)
        #expect(try await h.fetch(outputsJob.id, on: 0).role == .parent(.outputs(plan)))
        let listed = try await h.handle(1).jobs(status: nil, limit: 10)
        #expect(Set(listed.map(\.role)) == [.standalone, split.role, outputs.role], "a listing reads roles too")

        // A fan-out: a part for each child that has one; none for a request without one; a
        // request that claimed to be a parent is made a child all the same.
        let claimed = try await h.claim(splitJob.id)
        #expect(claimed.job.role == split.role, "a claim reads the role")
        let part: JSONValue = .object(["index": .number(1), "part": .string("video")])
        var children = (0..<3).map { Harness.request("part \($0)") }
        children[0].role = .child(part: part)
        children[2].role = .parent(.split(.string("auto")))
        let ids = try #require(try await h.handle(2).fanOut(claimed.lease, children: children))
        let roles = try await ids.asyncMap { try await h.fetch($0, on: 3).role }
        #expect(roles == [.child(part: part), .child(part: nil), .child(part: nil)], "\(roles)")
        #expect(try await h.fetch(splitJob.id).role == split.role, "the parent keeps its plan while it waits")
        // The children as a worker claims them.
        let next = try await h.handle(0).claim(as: Harness.workerB, limit: 10, lease: .seconds(30))
        let claimedRoles = next.filter { ids.contains($0.job.id) }.sorted { $0.job.id < $1.job.id }.map(\.job.role)
        #expect(claimedRoles == [.child(part: part), .child(part: nil), .child(part: nil)], "\(claimedRoles)")
    }
}

extension Array {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
