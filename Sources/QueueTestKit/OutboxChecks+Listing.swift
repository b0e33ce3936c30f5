import Foundation
import Queue
import Testing

// Outbox conformance checks: listing and redelivery.
extension OutboxChecks {
    static func deliveriesListing(_ h: OutboxHarness) async throws {
        // e1: job 1 failed; e2: job 2 completed; e3: job 1 retried and completed; e4: job 3 completed.
        let job1 = try await h.submit("one")
        let job1Claim = try await h.claim(job1.id)
        #expect(try await h.store.fail(job1Claim.lease, error: finalError, retryDelay: .zero))
        let e1 = try #require(try await h.events(job1.id).first)
        h.clock.advance(by: .milliseconds(1))
        let (job2, e2) = try await h.completedEvent("two")
        h.clock.advance(by: .milliseconds(1))
        _ = try await h.store.retry(job1.id)
        let job1Again = try await h.claim(job1.id)
        #expect(try await h.store.complete(job1Again.lease, result: .object([:]), tracks: []))
        let e3 = try #require(try await h.events(job1.id).first)
        h.clock.advance(by: .milliseconds(1))
        let (_, e4) = try await h.completedEvent("three")
        // A job without a webhook.
        let plain = try await h.submit("plain", webhook: nil)
        let plainClaim = try await h.claim(plain.id)
        #expect(try await h.store.complete(plainClaim.lease, result: .object([:]), tracks: []))

        let names = [e1.id: "e1", e2.id: "e2", e3.id: "e3", e4.id: "e4"]
        func named(_ events: [WebhookDelivery]) -> [String] { events.map { names[$0.id] ?? $0.id } }
        #expect(Set(names.keys).count == 4)
        for index in h.stores.indices {
            let store = h.handle(index)
            #expect(
                named(try await store.deliveries(job: nil, limit: 100)) == ["e4", "e3", "e2", "e1"],
                "all, newest first (handle \(index))"
            )
            #expect(named(try await store.deliveries(job: nil, limit: 2)) == ["e4", "e3"], "limit 2 (handle \(index))")
            #expect(
                named(try await store.deliveries(job: job1.id, limit: 100)) == ["e3", "e1"],
                "job 1's events, newest first (handle \(index))"
            )
            #expect(
                named(try await store.deliveries(job: job1.id, limit: 1)) == ["e3"],
                "job 1's newest (handle \(index))"
            )
            #expect(named(try await store.deliveries(job: job2.id, limit: 100)) == ["e2"], "job 2's (handle \(index))")
            #expect(
                named(try await store.deliveries(job: plain.id, limit: 100)) == [],
                "a job without a webhook has none"
            )
            #expect(
                named(try await store.deliveries(job: JobID.make(at: h.clock.date), limit: 100)) == [],
                "an unknown job has none"
            )
        }
        let listed = try await h.store.deliveries(job: nil, limit: 100)
        #expect(listed.map(\.type) == ["job.completed", "job.completed", "job.completed", "job.failed"])
        #expect(listed.map(\.jobID) == [e4.jobID, job1.id, job2.id, job1.id])
        #expect(listed.map { ms($0.createdAt)! } == listed.map { ms($0.createdAt)! }.sorted(by: >))
    }

    static func redeliver(_ h: OutboxHarness) async throws {
        // A delivered event.
        let (_, delivered) = try await h.completedEvent("delivered")
        let first = try await h.claimEvent(delivered.id)
        let attempt1 = h.attempt(1, status: 200)
        #expect(try await h.store.record(first, outcome: .delivered(attempt1)))
        h.clock.advance(by: .seconds(60))
        let again = try await h.handle(2).redeliver(delivered.id)
        #expect(again.id == delivered.id)
        #expect(again.status == .pending)
        #expect(ms(again.nextAttemptAt).map { $0 <= h.clock.milliseconds } == true, "due at once")
        #expect(again.attempts == 1, "the attempts made are kept")
        #expect(again.log == [attempt1], "the log is kept")
        let resent = try await h.claimEvent(delivered.id, as: "dispatcher-2", on: 3)
        #expect(resent.delivery.id == delivered.id, "the same webhook-id")
        #expect(resent.payload == first.payload, "the same bytes")
        let attempt2 = h.attempt(2, status: 204, by: "dispatcher-2")
        #expect(try await h.store.record(resent, outcome: .delivered(attempt2)))
        let redelivered = try await h.event(delivered.id)
        #expect(redelivered.status == .delivered)
        #expect(redelivered.attempts == 2)
        #expect(redelivered.log == [attempt1, attempt2])
        #expect(ms(redelivered.deliveredAt) == h.clock.milliseconds)

        // A failed event.
        let (_, failed) = try await h.completedEvent("failed")
        let failing = try await h.claimEvent(failed.id)
        #expect(try await h.store.record(failing, outcome: .failed(h.attempt(1, status: 410, error: "HTTP 410"))))
        try await h.expectNothingClaimed("failed")
        let back = try await h.handle(1).redeliver(failed.id)
        #expect(back.id == failed.id)
        #expect(back.status == .pending)
        #expect(try await h.event(failed.id, on: 3).status == .pending)
        let retried = try await h.claimEvent(failed.id, on: 2)
        #expect(retried.payload == failing.payload)

        // Unknown, and being delivered.
        await h.expectStoreError("redeliver of an unknown id", .notFound) {
            try await h.store.redeliver("msg_doesnotexist")
        }
        await h.expectStoreError("redeliver of an event being delivered", .conflict) {
            try await h.store.redeliver(failed.id)
        }
        #expect(try await h.event(failed.id).status == .delivering, "the conflict changed nothing")
        #expect(
            try await h.store.record(retried, outcome: .delivered(h.attempt(2, status: 200))),
            "the dispatcher still holds its lease"
        )
        #expect(try await h.event(failed.id).status == .delivered)
    }
}
