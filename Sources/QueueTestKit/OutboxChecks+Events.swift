import Foundation
import Queue
import Testing

// Outbox conformance checks: which transitions write events.
extension OutboxChecks {
    static func eventPerTerminalTransition(_ h: OutboxHarness) async throws {
        var expected = 0

        // complete → job.completed.
        let completed = try await h.submit("completed")
        let completedClaim = try await h.claim(completed.id)
        h.clock.advance(by: .seconds(1))
        #expect(
            try await h.handle(2).complete(
                completedClaim.lease,
                result: .object(["output": .string("/out/completed.mp4")]),
                tracks: []
            )
        )
        try await h.expectEvents(completed, ["job.completed"], "complete")
        expected += 1

        // A non-retryable failure → job.failed.
        h.clock.advance(by: .seconds(1))
        let final = try await h.submit("final")
        let finalClaim = try await h.claim(final.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(3).fail(finalClaim.lease, error: finalError, retryDelay: .seconds(10)))
        try await h.expectEvents(final, ["job.failed"], "non-retryable failure")
        expected += 1

        // Retryable failures until no attempt is left → one job.failed, at the last one.
        let exhausted = try await h.submit("exhausted", maxAttempts: 2)
        let firstAttempt = try await h.claim(exhausted.id)
        #expect(try await h.store.fail(firstAttempt.lease, error: retryableError, retryDelay: .zero))
        try await h.expectEvents(exhausted, [], "retryable failure, attempt 1 of 2")
        let secondAttempt = try await h.claim(exhausted.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.fail(secondAttempt.lease, error: retryableError, retryDelay: .zero))
        try await h.expectEvents(exhausted, ["job.failed"], "retryable failure, attempt 2 of 2")
        expected += 1

        // cancel of a queued job → job.cancelled.
        let queued = try await h.submit("queued")
        h.clock.advance(by: .seconds(1))
        guard case .cancelled = try await h.handle(1).cancel(queued.id) else {
            Issue.record("cancel of a queued job did not cancel it")
            return
        }
        try await h.expectEvents(queued, ["job.cancelled"], "cancel of a queued job")
        expected += 1

        // cancel of a running job: no event for the request; confirmCancelled → job.cancelled.
        let running = try await h.submit("running")
        let runningClaim = try await h.claim(running.id)
        h.clock.advance(by: .seconds(1))
        guard case .requested = try await h.handle(2).cancel(running.id) else {
            Issue.record("cancel of a running job was not a request")
            return
        }
        try await h.expectEvents(running, [], "a cancel request is not terminal")
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(3).confirmCancelled(runningClaim.lease))
        try await h.expectEvents(running, ["job.cancelled"], "confirmCancelled")
        expected += 1

        // release of a running job whose cancel was requested → job.cancelled.
        let released = try await h.submit("released")
        let releasedClaim = try await h.claim(released.id)
        _ = try await h.store.cancel(released.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(1).release(releasedClaim.lease))
        try await h.expectEvents(released, ["job.cancelled"], "release after a cancel request")
        expected += 1

        // A retryable failure of a running job whose cancel was requested → job.cancelled.
        let failedAfterCancel = try await h.submit("failed-after-cancel")
        let failedAfterCancelClaim = try await h.claim(failedAfterCancel.id)
        _ = try await h.store.cancel(failedAfterCancel.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(1).fail(failedAfterCancelClaim.lease, error: retryableError, retryDelay: .zero))
        #expect(try await h.fetch(failedAfterCancel.id).status == .cancelled)
        try await h.expectEvents(failedAfterCancel, ["job.cancelled"], "retryable failure after a cancel request")
        expected += 1

        // A running job with a cancel request whose worker died → job.cancelled at the next claim.
        let orphan = try await h.submit("orphan")
        _ = try await h.claim(orphan.id, lease: .seconds(30))
        _ = try await h.store.cancel(orphan.id)
        h.clock.advance(by: .seconds(31))
        let none = try await h.handle(2).claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
        #expect(none.map(\.job.input) == [], "the orphan is cancelled, not run again")
        #expect(try await h.fetch(orphan.id).status == .cancelled)
        try await h.expectEvents(orphan, ["job.cancelled"], "lease expired after a cancel request")
        expected += 1

        // The lease of the last attempt expired → job.failed (lease_lost) at the next claim.
        let abandoned = try await h.submit("abandoned", maxAttempts: 1)
        _ = try await h.claim(abandoned.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        let nothing = try await h.handle(3).claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
        #expect(nothing.map(\.job.input) == [])
        #expect(try await h.fetch(abandoned.id).error?.code == .leaseLost)
        try await h.expectEvents(abandoned, ["job.failed"], "lease lost on the last attempt")
        expected += 1
        if let event = try await h.events(abandoned.id).first {
            let claimed = try await h.claimEvents(
                try await h.store.deliveries(job: nil, limit: 100).reversed().map(\.id),
                limit: 100,
                "every event written so far is due"
            )
            if let item = claimed.first(where: { $0.delivery.id == event.id }) {
                let body = try JSONDecoder().decode(JSONValue.self, from: item.payload)
                #expect(body["type"] == .string("job.failed"))
                #expect(body["data"]?["status"] == .string("failed"))
                #expect(
                    body["data"]?["error"]?["code"] == .string("lease_lost"),
                    "the lease_lost event carries the job's error"
                )
            }
        }

        let all = try await h.handle(1).deliveries(job: nil, limit: 100)
        #expect(all.count == expected, "one event per terminal transition: \(all.map(\.type))")
    }

    static func noEventWithoutTerminalTransition(_ h: OutboxHarness) async throws {
        // A retryable failure with attempts left.
        let flaky = try await h.submit("flaky", maxAttempts: 3)
        let flakyClaim = try await h.claim(flaky.id)
        #expect(try await h.store.fail(flakyClaim.lease, error: retryableError, retryDelay: .seconds(60)))
        #expect(try await h.fetch(flaky.id).status == .unknown)
        try await h.expectEvents(flaky, [], "a retryable failure with attempts left")

        // A release without a cancel request.
        let released = try await h.submit("released")
        let releasedClaim = try await h.claim(released.id)
        #expect(try await h.store.release(releasedClaim.lease))
        #expect(try await h.fetch(released.id).status == .unknown)
        try await h.expectEvents(released, [], "a release")

        // A lease expiry with attempts left: back to the queue, claimed again.
        let expired = try await h.claim(released.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        let reclaimed = try await h.claim(released.id, on: 2)
        #expect(reclaimed.lease.token != expired.lease.token)
        try await h.expectEvents(released, [], "a lease expiry with attempts left")
        _ = try await h.handle(3).heartbeat(reclaimed.lease, progress: 0.5, tracks: [], extendBy: .seconds(30))
        try await h.expectEvents(released, [], "a heartbeat")

        // Jobs without a webhook: completed, failed, cancelled (queued and running), lease lost.
        let plainCompleted = try await h.submit("plain-completed", webhook: nil)
        let plainCompletedClaim = try await h.claim(plainCompleted.id)
        #expect(try await h.store.complete(plainCompletedClaim.lease, result: .object([:]), tracks: []))
        let plainFailed = try await h.submit("plain-failed", webhook: nil)
        let plainFailedClaim = try await h.claim(plainFailed.id)
        #expect(try await h.store.fail(plainFailedClaim.lease, error: finalError, retryDelay: .zero))
        let plainQueued = try await h.submit("plain-queued", webhook: nil)
        _ = try await h.store.cancel(plainQueued.id)
        let plainRunning = try await h.submit("plain-running", webhook: nil)
        let plainRunningClaim = try await h.claim(plainRunning.id)
        _ = try await h.store.cancel(plainRunning.id)
        #expect(try await h.store.confirmCancelled(plainRunningClaim.lease))
        let plainLost = try await h.submit("plain-lost", webhook: nil, maxAttempts: 1)
        _ = try await h.claim(plainLost.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        _ = try await h.store.claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
        for job in [plainCompleted, plainFailed, plainQueued, plainRunning, plainLost] {
            #expect(try await h.fetch(job.id).status.isTerminal, "\(job.input) has ended")
            try await h.expectEvents(job, [], "a job without a webhook: \(job.input)")
        }

        #expect(try await h.store.deliveries(job: nil, limit: 100).map(\.type) == [], "no event at all")
        try await h.expectNothingClaimed("no event to claim")
    }

    static func retryMakesSecondEvent(_ h: OutboxHarness) async throws {
        let job = try await h.submit("twice")
        let first = try await h.claim(job.id)
        #expect(try await h.store.fail(first.lease, error: finalError, retryDelay: .zero))
        try await h.expectEvents(job, ["job.failed"], "the first attempt failed")
        h.clock.advance(by: .seconds(1))
        _ = try await h.handle(1).retry(job.id)
        try await h.expectEvents(job, ["job.failed"], "retry itself is not terminal", fresh: false)
        let second = try await h.claim(job.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.complete(second.lease, result: .object(["output": .string(job.output)]), tracks: []))
        try await h.expectEvents(job, ["job.failed", "job.completed"], "the retried job completed")
        let events = try await h.events(job.id)
        try #require(events.count == 2)
        #expect(events[0].id != events[1].id, "a second terminal status is a second event, with its own id")

        // Both are delivered separately, each with its own body.
        let claimed = try await h.claimEvents([events[1].id, events[0].id], "both events are due, the older first")
        let bodies = try claimed.map { try JSONDecoder().decode(JSONValue.self, from: $0.payload) }
        #expect(bodies.map { $0["type"] } == [.string("job.failed"), .string("job.completed")])
        #expect(bodies.map { $0["data"]?["attempt"] } == [.number(1), .number(2)])

        // A cancelled job retried and cancelled again: two job.cancelled events.
        let queued = try await h.submit("queued")
        _ = try await h.store.cancel(queued.id)
        _ = try await h.store.retry(queued.id)
        h.clock.advance(by: .seconds(1))
        _ = try await h.store.cancel(queued.id)
        try await h.expectEvents(queued, ["job.cancelled", "job.cancelled"], "cancelled, retried, cancelled again")
        let cancelledEvents = try await h.events(queued.id)
        #expect(Set(cancelledEvents.map(\.id)).count == cancelledEvents.count)
    }

    /// A job graph sends one event, the parent's, when a child's failure ends it (with the
    /// child's code); its children, which have no webhook, send none; the parent's join sends
    /// its own when it completes.
    static func graphEvents(_ h: OutboxHarness) async throws {
        for failing in [true, false] {
            let parent = try await h.submit(failing ? "graph failing" : "graph joined")
            let claimed = try await h.claim(parent.id)
            let children = (0..<2).map { index in
                JobRequest(
                    input: "/data/part\(index).mov",
                    output: "/out/part\(index).mp4",
                    preset: "low",
                    webhook: OutboxHarness.hook
                )
            }
            let ids = try #require(try await h.handle(1).fanOut(claimed.lease, children: children))
            let running = try await h.handle(2).claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
            try #require(Set(running.map(\.job.id)) == Set(ids))
            h.clock.advance(by: .seconds(1))
            if failing {
                let error = JobError(code: .decodeFailed, message: "damaged", retryable: false)
                #expect(try await h.handle(0).fail(running[0].lease, error: error, retryDelay: .zero))
                try await h.expectEvents(parent, ["job.failed"], "a child's failure ends the parent")
                #expect(try await h.handle(1).complete(running[1].lease, result: .null, tracks: []))
            } else {
                for child in running { #expect(try await h.handle(0).complete(child.lease, result: .null, tracks: [])) }
                try await h.expectEvents(parent, [], "the join is queued: no event yet", fresh: false)
                let join = try await h.claim(parent.id)
                #expect(try await h.handle(3).complete(join.lease, result: .null, tracks: []))
                try await h.expectEvents(parent, ["job.completed"], "the join completed")
            }
            for id in ids { #expect(try await h.events(id).isEmpty, "children are silent") }
            let payload = try #require(try await h.events(parent.id).first)
            #expect(payload.type == (failing ? "job.failed" : "job.completed"))
        }
    }
}
