import Foundation
import Queue
import Testing

// Outbox conformance checks: recording.
extension OutboxChecks {
    static func recordDelivered(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("delivered")
        h.clock.advance(by: .seconds(2))
        let claimed = try await h.claimEvent(event.id)
        h.clock.advance(by: .seconds(1))
        let attempt = h.attempt(1, status: 200, latency: 87)
        #expect(try await h.handle(2).record(claimed, outcome: .delivered(attempt)))
        for index in h.stores.indices {
            let delivered = try await h.event(event.id, on: index)
            #expect(delivered.status == .delivered)
            #expect(delivered.attempts == 1)
            #expect(ms(delivered.deliveredAt) == h.clock.milliseconds, "deliveredAt is when it was recorded")
            #expect(delivered.lastStatusCode == 200)
            #expect(delivered.lastError == nil)
            #expect(delivered.log == [attempt])
            #expect(ms(delivered.createdAt) == ms(event.createdAt), "createdAt is kept")
            #expect(delivered.type == "job.completed")
        }
        h.clock.advance(by: .seconds(48 * 3600))
        try await h.expectNothingClaimed("a delivered event is never sent again (unless redelivered)")
    }

    static func recordRetry(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("retried")
        let first = try await h.claimEvent(event.id, as: "dispatcher-1")
        let attempt1 = h.attempt(1, status: 503, latency: 12, error: "HTTP 503", by: "dispatcher-1")
        #expect(try await h.store.record(first, outcome: .retry(attempt1, after: .seconds(10))))
        let waiting = try await h.event(event.id)
        #expect(waiting.status == .pending)
        #expect(waiting.attempts == 1)
        #expect(ms(waiting.nextAttemptAt) == h.clock.milliseconds + 10_000, "next attempt = now + delay")
        #expect(waiting.lastStatusCode == 503)
        #expect(waiting.lastError == "HTTP 503")
        #expect(waiting.deliveredAt == nil)
        #expect(waiting.log == [attempt1])

        try await h.expectNothingClaimed("10 s to wait")
        h.clock.advance(by: .milliseconds(9_999))
        try await h.expectNothingClaimed("1 ms before the next attempt")
        h.clock.advance(by: .milliseconds(1))
        let second = try await h.claimEvent(event.id, as: "dispatcher-2", on: 3)
        #expect(second.delivery.attempts == 1, "the claim tells how many attempts were made")
        #expect(second.payload == first.payload)
        let attempt2 = h.attempt(2, status: nil, latency: 15_000, error: "Timeout was reached", by: "dispatcher-2")
        #expect(try await h.handle(3).record(second, outcome: .retry(attempt2, after: .seconds(30))))
        let waitingAgain = try await h.event(event.id)
        #expect(waitingAgain.status == .pending)
        #expect(waitingAgain.attempts == 2)
        #expect(waitingAgain.lastStatusCode == nil, "no response: no status code")
        #expect(waitingAgain.lastError == "Timeout was reached")
        #expect(ms(waitingAgain.nextAttemptAt) == h.clock.milliseconds + 30_000)

        h.clock.advance(by: .seconds(30))
        let third = try await h.claimEvent(event.id, as: "dispatcher-3", on: 2)
        #expect(third.delivery.attempts == 2)
        h.clock.advance(by: .milliseconds(3))
        let attempt3 = h.attempt(3, status: 200, latency: 3, by: "dispatcher-3")
        #expect(try await h.handle(2).record(third, outcome: .delivered(attempt3)))
        let delivered = try await h.event(event.id, on: 1)
        #expect(delivered.status == .delivered)
        #expect(delivered.attempts == 3)
        #expect(delivered.lastStatusCode == 200)
        #expect(ms(delivered.deliveredAt) == h.clock.milliseconds)
        #expect(
            delivered.log == [attempt1, attempt2, attempt3],
            "every attempt, in order, with code, latency, error and dispatcher"
        )
        let listed = try await h.events(delivered.jobID, on: 2)
        #expect(listed.first?.log == [attempt1, attempt2, attempt3], "deliveries(job:) has the log")
    }

    static func recordFailed(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("failed")
        let claimed = try await h.claimEvent(event.id)
        h.clock.advance(by: .seconds(1))
        let attempt = h.attempt(
            1,
            status: nil,
            latency: 0,
            error: "webhook_forbidden: refused: hooks.example resolves to 10.0.0.1"
        )
        #expect(try await h.handle(3).record(claimed, outcome: .failed(attempt)))
        let failed = try await h.event(event.id)
        #expect(failed.status == .failed)
        #expect(failed.attempts == 1)
        #expect(failed.deliveredAt == nil)
        #expect(failed.lastStatusCode == nil)
        #expect(failed.lastError == attempt.error)
        #expect(failed.log == [attempt])
        h.clock.advance(by: .seconds(48 * 3600))
        try await h.expectNothingClaimed("a failed event is not sent again (unless redelivered)")
        #expect(try await h.event(event.id).status == .failed)
    }
}
