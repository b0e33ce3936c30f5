import Foundation
import Queue
import Testing

// Conformance checks: job graphs (issue 27).
extension Checks {
    /// A fan-out creates every child or none, fenced by the lease: the children in order, with
    /// the parent's owner and creation time (claimed ahead of later work of the same priority),
    /// no webhook; the parent waits without a lease (never claimed, never expired), its
    /// attempt not counted; a stale lease, a cancel request or a second fan-out creates nothing.
    static func fanOut(_ h: Harness) async throws {
        let parent = try await h.submit("parent", maxAttempts: 3)
        let claimed = try await h.claim(parent.id)
        h.clock.advance(by: .seconds(1))
        let later = try await h.submit("submitted after the parent")
        await h.expectStoreError(.conflict, "no children") { try await h.handle(2).fanOut(claimed.lease, children: []) }
        let children = (0..<3).map { index in
            var request = Harness.request("child \(index)", priority: 0, maxAttempts: 2, key: "child-key-\(index)")
            request.webhook = "https://hooks.example/child"
            request.owner = "someone else"
            return request
        }
        let ids = try #require(try await h.handle(2).fanOut(claimed.lease, children: children))
        #expect(ids.count == 3)

        let waiting = try await h.fetch(parent.id, on: 3)
        #expect(waiting.status == .reading && waiting.attempt == 0, "the fan-out attempt is not counted: \(waiting)")
        #expect(waiting.children == JobGraphStateMachine.Children(total: 3) && waiting.graphPhase == .waiting)
        #expect(waiting.parent == nil && waiting.childIndex == nil)
        for (index, id) in ids.enumerated() {
            let child = try await h.fetch(id)
            #expect(child.parent == parent.id && child.childIndex == index && child.status == .unknown)
            #expect(child.input == "/data/child \(index).mov" && child.maxAttempts == 2 && child.children == nil)
            #expect(child.owner == parent.owner && child.createdAt == parent.createdAt, "the parent's owner and age")
            #expect(child.webhook == nil && child.idempotencyKey == nil, "children are silent and keyless")
        }

        // The children come before work submitted after their parent; the parent is never
        // claimed while it waits, even long after its lease would have expired.
        h.clock.advance(by: .seconds(120))
        let next = try await h.handle(1).claim(as: Harness.workerB, limit: 10, lease: .seconds(30))
        #expect(Set(next.prefix(3).map(\.job.id)) == Set(ids), "children first, then later work; never the parent")
        #expect(next.map(\.job.id).last == later.id && next.count == 4, "\(next.map(\.job.input))")
        #expect(try await h.fetch(parent.id).status == .reading)
        for job in next { _ = try await h.handle(0).complete(job.lease, result: .null, tracks: []) }

        // The old lease is spent: a second fan-out creates nothing.
        #expect(try await h.handle(0).fanOut(claimed.lease, children: children) == nil)
        #expect(try await h.handle(0).jobs(status: nil, limit: 100).count == 5, "parent, 3 children, later")

        // A stale lease (the job was claimed again) and a cancel request create nothing.
        let other = try await h.submit("other parent")
        let first = try await h.claim(other.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        let second = try await h.claim(other.id, as: Harness.workerB, lease: .seconds(30), on: 2)
        #expect(try await h.handle(3).fanOut(first.lease, children: children) == nil, "a stale worker")
        _ = try await h.handle(0).cancel(other.id)
        #expect(try await h.handle(3).fanOut(second.lease, children: children) == nil, "a cancel was asked for")
        #expect(try await h.handle(0).jobs(status: nil, limit: 100).count == 6, "nothing created")
        #expect(try await h.fetch(other.id).children == nil)
    }
}
