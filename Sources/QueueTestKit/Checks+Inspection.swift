import Foundation
import Queue
import Testing

// Conformance checks: a queued job's place in line.
extension Checks {
    static func queuedAhead(_ h: Harness) async throws {
        let stores = h.stores
        // In claim order: high (10), then a, b (0, oldest first); c is due later; d is running.
        let a = try await h.submit("ahead-a", on: 0)
        h.clock.advance(by: .milliseconds(5))
        let b = try await h.submit("ahead-b", on: 1)
        let high = try await h.submit("ahead-high", priority: 10, on: 2)
        let d = try await h.submit("ahead-d", priority: 20, on: 0)
        let claimedAt = h.clock.now()
        let claimed = try await h.store.claim(as: workerA, limit: 1, lease: .seconds(30))
        #expect(claimed.map(\.job.id) == [d.id])
        h.clock.advance(by: .milliseconds(5))
        // The running job's lease, as its page shows it; none for a queued one.
        let expiry = try await stores[1 % stores.count].leaseExpiry(of: d.id)
        #expect(expiry?.milliseconds == claimedAt.addingTimeInterval(30).milliseconds)
        #expect(try await stores[0].leaseExpiry(of: a.id) == nil)
        let c = try await h.submit("ahead-c", priority: 10, on: 1)
        let now = h.clock.now()
        #expect(try await stores[0].queuedAhead(of: high, owner: nil, at: now, limit: 100) == 0)
        #expect(
            try await stores[1 % stores.count].queuedAhead(of: a, owner: nil, at: now, limit: 100) == 2,
            "high and c"
        )
        #expect(try await stores[0].queuedAhead(of: b, owner: nil, at: now, limit: 100) == 3)
        #expect(try await stores[0].queuedAhead(of: b, owner: nil, at: now, limit: 2) == 2, "counted up to the limit")
        // A job not due yet (its retry backoff) is not in line before others.
        #expect(try await stores[0].queuedAhead(of: a, owner: nil, at: now.addingTimeInterval(-0.004), limit: 100) == 1)
        _ = c
        // A tenant counts its own jobs only: b's owner has a and b queued, a ahead of b.
        var mine = Harness.request("ahead-mine")
        mine.owner = "tenant-a"
        let first = try await h.store.submit(mine).job
        var theirs = Harness.request("ahead-theirs", priority: 5)
        theirs.owner = "tenant-b"
        _ = try await h.store.submit(theirs)
        h.clock.advance(by: .milliseconds(5))
        mine.input = "/data/ahead-mine-2.mov"
        let second = try await h.store.submit(mine).job
        let later = h.clock.now()
        #expect(try await stores[0].queuedAhead(of: second, owner: "tenant-a", at: later, limit: 100) == 1)
        #expect(try await stores[0].queuedAhead(of: first, owner: "tenant-a", at: later, limit: 100) == 0)
        #expect(try await stores[0].queuedAhead(of: second, owner: nil, at: later, limit: 100) == 6, "the whole line")
        #expect(try await stores[0].queuedAhead(of: second, owner: "tenant-c", at: later, limit: 100) == 0)
    }
}

// Conformance checks: the attempts a job's timeline shows.
extension Checks {
    static func attemptHistory(_ h: Harness) async throws {
        let stores = h.stores
        // Attempt 1 fails and is queued again; attempt 2's worker vanishes and attempt 3
        // takes over; attempt 3 completes.
        let job = try await h.submit("attempts", maxAttempts: 3)
        let first = try await h.claim(job.id, as: workerA)
        let firstStarted = h.clock.now()
        h.clock.advance(by: .seconds(1))
        let full = JobError(code: .outputUnwritable, message: "/out is full")
        #expect(try await h.store.fail(first.lease, error: full, retryDelay: .zero))
        let failedAt = h.clock.now()
        h.clock.advance(by: .seconds(1))
        _ = try await h.claim(job.id, as: workerB)
        h.clock.advance(by: .seconds(31))
        let third = try await h.claim(job.id, as: workerA, on: 2)
        let takenAt = h.clock.now()
        #expect(try await h.store.complete(third.lease, result: .object([:]), tracks: []))
        let attempts = try await stores[1 % stores.count].attempts(of: job.id)
        #expect(attempts.map(\.attempt) == [1, 2], "the completed attempt is the job's own")
        #expect(attempts.map(\.outcome) == ["unknown", JobAttempt.takenOver])
        #expect(attempts.map(\.worker) == [workerA.name, workerB.name])
        #expect(attempts.first?.startedAt?.milliseconds == firstStarted.milliseconds)
        #expect(attempts.first?.endedAt.milliseconds == failedAt.milliseconds)
        #expect(attempts.first?.errorCode == full.code && attempts.first?.errorMessage == full.message)
        #expect(attempts.last?.endedAt.milliseconds == takenAt.milliseconds)
        #expect(attempts.last?.errorCode == .leaseLost)
        #expect(attempts.last?.errorMessage == JobAttempt.takeoverMessage(from: workerB.name, to: workerA.name))

        // A running job cancelled, and one that fails for good: one attempt each.
        let cancelled = try await h.submit("attempts-cancel", maxAttempts: 3)
        let running = try await h.claim(cancelled.id)
        _ = try await h.store.cancel(cancelled.id)
        #expect(try await h.store.confirmCancelled(running.lease))
        #expect(try await stores[0].attempts(of: cancelled.id).map(\.outcome) == ["cancelled"])
        let failing = try await h.submit("attempts-fail", maxAttempts: 3)
        let doomed = try await h.claim(failing.id)
        #expect(try await h.store.fail(doomed.lease, error: finalError, retryDelay: .zero))
        let failed = try await stores[0].attempts(of: failing.id)
        #expect(failed.map(\.outcome) == ["failed"] && failed.first?.errorCode == finalError.code)
        #expect(try await stores[0].attempts(of: JobID("00000000-0000-0000-0000-000000000000")).isEmpty)

        // A worker's release (a graceful shutdown) hands the attempt back: not an attempt.
        let released = try await h.submit("attempts-release", maxAttempts: 3)
        let held = try await h.claim(released.id)
        #expect(try await h.store.release(held.lease))
        let again = try await h.claim(released.id)
        #expect(again.job.attempt == 1, "the same attempt number again")
        #expect(try await h.store.complete(again.lease, result: .object([:]), tracks: []))
        #expect(try await stores[0].attempts(of: released.id).isEmpty)
    }
}
