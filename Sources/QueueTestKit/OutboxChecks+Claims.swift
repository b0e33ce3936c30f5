import Foundation
import Queue
import Testing

// Outbox conformance checks: claiming.
extension OutboxChecks {
    static func claimDue(_ h: OutboxHarness) async throws {
        // A: written at t0, attempted at once, retried in 60 s.
        let (_, a) = try await h.completedEvent("a")
        let aClaim = try await h.claimEvents([a.id], "a fresh event is due at once")
        if let aClaim = aClaim.first {
            #expect(
                try await h.store.record(
                    aClaim,
                    outcome: .retry(h.attempt(1, status: 500, error: "HTTP 500"), after: .seconds(60))
                )
            )
        }
        try await h.expectNothingClaimed("A waits 60 s for its retry")

        // B, C, D: written 10 s later, 1 ms apart, due at once.
        h.clock.advance(by: .seconds(10))
        let (_, b) = try await h.completedEvent("b")
        h.clock.advance(by: .milliseconds(1))
        let (_, c) = try await h.completedEvent("c")
        h.clock.advance(by: .milliseconds(1))
        let (_, d) = try await h.completedEvent("d")

        h.clock.advance(by: .milliseconds(49_997))  // t0 + 59.999 s
        try await h.claimEvents([b.id, c.id], limit: 2, on: 2, "limit 2: the two longest due, oldest first")
        h.clock.advance(by: .milliseconds(1))  // t0 + 60 s: A is due, after D
        try await h.claimEvents(
            [d.id, a.id],
            as: "dispatcher-2",
            limit: 10,
            on: 3,
            "D (due at t0 + 10.002 s), then A (due at t0 + 60 s)"
        )
        try await h.expectNothingClaimed("every event is leased")

        // limit 1, one by one.
        h.clock.advance(by: .seconds(1))
        let e = try await h.completedEvent("e").event
        h.clock.advance(by: .milliseconds(1))
        let f = try await h.completedEvent("f").event
        try await h.claimEvents([e.id], limit: 1, on: 0, "limit 1: the oldest")
        try await h.claimEvents([f.id], limit: 1, on: 1, "limit 1: the next")
        try await h.expectNothingClaimed("all claimed")
    }

    static func claimLease(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("leased")
        let first = try await h.claimEvent(event.id, as: "dispatcher-1", lease: .seconds(30), on: 1)
        #expect(first.delivery.status == .delivering, "a claimed event is being delivered")
        #expect(first.delivery.attempts == 0)
        #expect(try await h.event(event.id).status == .delivering)
        try await h.expectNothingClaimed("the event is leased for 30 s", on: 2)
        h.clock.advance(by: .seconds(29))
        try await h.expectNothingClaimed("the lease has 1 s left", on: 3)

        h.clock.advance(by: .seconds(2))
        let second = try await h.claimEvent(event.id, as: "dispatcher-2", lease: .seconds(30), on: 2)
        #expect(second.delivery.id == first.delivery.id, "the same event, the same webhook-id")
        #expect(second.payload == first.payload, "the same bytes")
        #expect(second.leaseToken != first.leaseToken, "a new lease")
        #expect(second.dispatcher == "dispatcher-2")
        try await h.expectNothingClaimed("dispatcher-2 holds the lease now", on: 0)

        // The old lease writes nothing, whatever the outcome.
        h.clock.advance(by: .seconds(1))
        #expect(
            try await h.handle(3).record(first, outcome: .delivered(h.attempt(1, status: 200))) == false,
            "stale delivered"
        )
        #expect(
            try await h.handle(3).record(first, outcome: .retry(h.attempt(1, status: 500), after: .seconds(5)))
                == false,
            "stale retry"
        )
        #expect(
            try await h.handle(3).record(first, outcome: .failed(h.attempt(1, status: 410))) == false,
            "stale failed"
        )
        let untouched = try await h.event(event.id)
        #expect(untouched.status == .delivering)
        #expect(untouched.attempts == 0)
        #expect(untouched.log == [])
        #expect(untouched.deliveredAt == nil)
        #expect(untouched.lastStatusCode == nil)
        #expect(untouched.lastError == nil)

        // The new lease records; then it is spent too.
        #expect(
            try await h.handle(1).record(second, outcome: .delivered(h.attempt(1, status: 204, by: "dispatcher-2")))
        )
        let delivered = try await h.event(event.id)
        #expect(delivered.status == .delivered)
        #expect(delivered.attempts == 1)
        #expect(delivered.log.map(\.dispatcher) == ["dispatcher-2"])
        #expect(
            try await h.handle(1).record(second, outcome: .failed(h.attempt(2, status: 500, by: "dispatcher-2")))
                == false,
            "a lease records once"
        )
        #expect(try await h.handle(1).record(first, outcome: .failed(h.attempt(2, status: 500))) == false)
        let final = try await h.event(event.id)
        #expect(final.status == .delivered)
        #expect(final.attempts == 1)
        #expect(final.log.count == 1)
    }

    static func noDoubleClaimUnderContention(_ h: OutboxHarness) async throws {
        var jobs: [Job] = []
        for index in 0..<24 { jobs.append(try await h.submit("job-\(index)", on: index)) }
        let claimedJobs = try await h.store.claim(as: OutboxHarness.worker, limit: 24, lease: .seconds(600))
        #expect(claimedJobs.count == 24)
        for (index, item) in claimedJobs.enumerated() {
            #expect(try await h.handle(index).complete(item.lease, result: .object([:]), tracks: []))
            if index % 5 == 0 { h.clock.advance(by: .milliseconds(1)) }
        }
        let written = try await h.store.deliveries(job: nil, limit: 100).map(\.id)
        #expect(written.count == 24)

        let perTask = try await withThrowingTaskGroup(of: (String, [ClaimedDelivery]).self) { group in
            for task in 0..<8 {
                let store = h.handle(task)
                let name = "dispatcher-\(task)"
                let limit = 1 + task % 3
                group.addTask {
                    var mine: [ClaimedDelivery] = []
                    for _ in 0..<100 {
                        let batch = try await store.claimDeliveries(as: name, limit: limit, lease: .seconds(600))
                        if batch.isEmpty { return (name, mine) }
                        #expect(batch.count <= limit, "claimDeliveries returned more than its limit \(limit)")
                        mine += batch
                        await Task.yield()
                    }
                    Issue.record("\(name) still claimed events after 100 claims")
                    return (name, mine)
                }
            }
            var results: [(String, [ClaimedDelivery])] = []
            for try await result in group { results.append(result) }
            return results
        }
        let ids = perTask.flatMap { $0.1.map(\.delivery.id) }
        var seen: Set<String> = []
        let twice = ids.filter { !seen.insert($0).inserted }
        #expect(twice == [], "events claimed twice while leased")
        #expect(Set(ids) == Set(written))
        #expect(perTask.allSatisfy { name, items in items.allSatisfy { $0.dispatcher == name } })
        try await h.expectNothingClaimed("every event is leased")
    }
}
