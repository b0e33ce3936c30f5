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
        #expect(Array(next.prefix(3).map(\.job.id)) == ids, "children first, in index order; never the parent")
        #expect(next.map(\.job.id).last == later.id && next.count == 4, "\(next.map(\.job.input))")
        #expect(try await h.fetch(parent.id).status == .reading)
        for job in next { _ = try await h.handle(0).complete(job.lease, result: .null, tracks: []) }
        // The last child's completion queued the parent's join: it runs as the parent's attempt.
        let join = try await h.claim(parent.id, on: 2)
        #expect(join.job.attempt == 1 && join.job.children?.completed == 3)
        _ = try await h.handle(3).complete(join.lease, result: .null, tracks: [])
        // Neither the fan-out (its attempt handed back) nor the wait for the parts is an
        // attempt that ended badly.
        #expect(try await h.store.attempts(of: parent.id).isEmpty)

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

    /// A parent fanned out into `count` children (claimed by worker A, fanned out on handle 2).
    private static func fannedOut(
        _ h: Harness,
        _ name: String,
        count: Int
    ) async throws -> (parent: JobID, children: [JobID]) {
        let parent = try await h.submit(name)
        let claimed = try await h.claim(parent.id)
        let requests = (0..<count).map { Harness.request("\(name) child \($0)", maxAttempts: 1) }
        let ids = try #require(try await h.handle(2).fanOut(claimed.lease, children: requests))
        return (parent.id, ids)
    }

    /// Claims every claimable job, by id.
    private static func claimAll(_ h: Harness, on index: Int = 1) async throws -> [JobID: ClaimedJob] {
        let claimed = try await h.handle(index).claim(as: Harness.workerB, limit: 50, lease: .seconds(30))
        return Dictionary(uniqueKeysWithValues: claimed.map { ($0.job.id, $0) })
    }

    /// The children's ends reach their parent (`JobGraphStateMachine`), in the same write: a
    /// completion is counted; the last one queues the join, which is claimed and completes as
    /// any job; a failure fails the parent with the child's code and cancels the siblings (a
    /// queued one at once, a running one asked to stop); a retry reruns only the children that
    /// did not complete; a waiting parent's cancel ends it at once and reaches its children; a
    /// retry waits for them to stop.
    static func graphLifecycle(_ h: Harness) async throws {
        // Completions, the join.
        let (parent, ids) = try await fannedOut(h, "joined", count: 2)
        var running = try await claimAll(h)
        #expect(Set(running.keys) == Set(ids))
        _ = try await h.handle(0).complete(try #require(running[ids[0]]).lease, result: .null, tracks: [])
        var fetched = try await h.fetch(parent, on: 3)
        #expect(fetched.status == .reading && fetched.children?.completed == 1)
        _ = try await h.handle(1).complete(try #require(running[ids[1]]).lease, result: .null, tracks: [])
        fetched = try await h.fetch(parent)
        #expect(fetched.status == .unknown && fetched.graphPhase == .join, "the join is queued: \(fetched)")
        let join = try await h.claim(parent, on: 2)
        #expect(join.job.attempt == 1, "the join is the parent's next attempt")
        #expect(try await h.handle(3).complete(join.lease, result: .object(["joined": .bool(true)]), tracks: []))
        #expect(try await h.fetch(parent).status == .completed)

        // A child fails: the parent fails with its code; its siblings are cancelled.
        let (failing, children) = try await fannedOut(h, "failing", count: 3)
        running = try await claimAll(h)
        _ = try await h.handle(0).complete(try #require(running[children[0]]).lease, result: .null, tracks: [])
        // The third child stays running; the second fails for good.
        let error = JobError(code: .decodeFailed, message: "frame 12 is damaged", retryable: false)
        _ = try await h.handle(1).fail(try #require(running[children[1]]).lease, error: error, retryDelay: .zero)
        fetched = try await h.fetch(failing)
        #expect(fetched.status == .failed && fetched.error?.code == .decodeFailed, "\(fetched)")
        #expect(fetched.error?.message.contains("child 1") == true)
        #expect(try await h.fetch(children[2]).cancelRequested, "the running sibling is asked to stop")
        await h.expectStoreError(.conflict, "children still stopping") { try await h.handle(2).retry(failing) }
        await h.expectStoreError(.conflict, "a child runs again through its parent") {
            try await h.handle(1).retry(children[1])
        }
        _ = try await h.handle(2).confirmCancelled(try #require(running[children[2]]).lease)
        fetched = try await h.fetch(failing)
        #expect(
            fetched.status == .failed
                && fetched.children == JobGraphStateMachine.Children(total: 3, completed: 1, failed: 1, cancelled: 1)
        )

        // Retried: the two that did not complete run again; the completed one stays.
        let retried = try await h.handle(3).retry(failing)
        #expect(retried.status == .reading && retried.children == JobGraphStateMachine.Children(total: 3, completed: 1))
        #expect(try await h.fetch(children[0]).status == .completed)
        running = try await claimAll(h, on: 2)
        #expect(Set(running.keys) == [children[1], children[2]], "only the unfinished run again")
        for claimed in running.values { _ = try await h.handle(0).complete(claimed.lease, result: .null, tracks: []) }
        #expect(try await h.fetch(failing).status == .unknown, "its join is queued")
        let failingJoin = try await h.claim(failing, on: 3)
        _ = try await h.handle(0).complete(failingJoin.lease, result: .null, tracks: [])

        // A waiting parent's cancel: it ends at once; a queued child is cancelled, a running one asked.
        let (cancelled, pair) = try await fannedOut(h, "cancelled", count: 2)
        let first = try await h.handle(1).claim(as: Harness.workerB, limit: 1, lease: .seconds(30))
        try #require(first.count == 1)
        let outcome = try await h.handle(0).cancel(cancelled)
        guard case .cancelled(let ended) = outcome else {
            Issue.record("a waiting parent's cancel: \(outcome)")
            return
        }
        #expect(ended.status == .cancelled)
        let queuedChild = pair.first { $0 != first[0].job.id }!
        #expect(try await h.fetch(queuedChild).status == .cancelled)
        #expect(try await h.fetch(first[0].job.id).cancelRequested)
        _ = try await h.handle(2).confirmCancelled(first[0].lease)
        #expect(try await h.fetch(cancelled).children == JobGraphStateMachine.Children(total: 2, cancelled: 2))
    }

    /// A parent that ends without completing lists what its completed children left, in its
    /// result (`outputs`: each one's kind, output as shown — a URL without its query — and
    /// result, in index order), written before its webhook event; a child that completes
    /// after that (it was running, asked to stop) is added; a retry clears the list.
    static func graphStoppedOutputs(_ h: Harness) async throws {
        let parent = try await h.submit("stopped")
        let claimed = try await h.claim(parent.id)
        var requests = (0..<3).map { Harness.request("stopped child \($0)", maxAttempts: 1) }
        requests[1].output = "https://bucket.example/out/stopped.mp4?X-Amz-Signature=secret"
        let ids = try #require(try await h.handle(2).fanOut(claimed.lease, children: requests))
        let running = try await claimAll(h)
        let firstResult = JSONValue.object(["bytes": .number(1234)])
        _ = try await h.handle(0).complete(try #require(running[ids[1]]).lease, result: firstResult, tracks: [])
        #expect(try await h.fetch(parent.id).result == nil, "nothing listed while the parent waits")

        guard case .cancelled(let ended) = try await h.handle(1).cancel(parent.id) else {
            Issue.record("a waiting parent's cancel did not end it")
            return
        }
        let entry = JSONValue.object([
            "kind": .string("export"), "output": .string("https://bucket.example/out/stopped.mp4"),
            "result": firstResult,
        ])
        #expect(ended.result == .object(["outputs": .array([entry])]), "\(ended.result.map { "\($0)" } ?? "nil")")
        // Child 0 was running: asked to stop, it completes all the same; child 2 it cancels.
        _ = try await h.handle(2).complete(try #require(running[ids[0]]).lease, result: .null, tracks: [])
        _ = try await h.handle(3).confirmCancelled(try #require(running[ids[2]]).lease)
        let after = try await h.fetch(parent.id)
        let outputs = after.result?["outputs"]?.arrayValue ?? []
        #expect(
            outputs.map { $0["output"]?.stringValue } == ["/out/stopped child 0.mp4", entry["output"]?.stringValue]
        )
        #expect(after.status == .cancelled && after.children?.completed == 2)

        // Retried, it waits for its children again, its list gone.
        let retried = try await h.handle(0).retry(parent.id)
        #expect(retried.result == nil && retried.status == .reading)
    }

    /// Twenty children ending at once over every handle: each counted once (no lost update of
    /// the parent's tally, no deadlock), and the join queued exactly when the last one completes;
    /// then twenty more of which one fails while the others complete.
    static func graphConcurrentEnds(_ h: Harness) async throws {
        for failing in [false, true] {
            let (parent, ids) = try await fannedOut(h, failing ? "busy and failing" : "busy", count: 20)
            let running = try await claimAll(h)
            #expect(Set(running.keys) == Set(ids))
            let broken = ids[7]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, claimed) in running.values.enumerated() {
                    group.addTask {
                        if failing && claimed.job.id == broken {
                            let error = JobError(code: .decodeFailed, message: "damaged", retryable: false)
                            _ = try await h.handle(index).fail(claimed.lease, error: error, retryDelay: .zero)
                        } else {
                            _ = try await h.handle(index).complete(claimed.lease, result: .null, tracks: [])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let fetched = try await h.fetch(parent)
            if failing {
                #expect(fetched.status == .failed && fetched.error?.code == .decodeFailed, "\(fetched)")
                #expect(fetched.children == JobGraphStateMachine.Children(total: 20, completed: 19, failed: 1))
            } else {
                #expect(fetched.children == JobGraphStateMachine.Children(total: 20, completed: 20), "\(fetched)")
                #expect(fetched.status == .unknown && fetched.graphPhase == .join)
                let join = try await h.claim(parent, on: 1)
                _ = try await h.handle(0).complete(join.lease, result: .null, tracks: [])
            }
        }
    }
}
