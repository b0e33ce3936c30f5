import Foundation
import Queue
import Testing

// Conformance checks: failing.
extension Checks {
    static func retryableFailureWithBackoff(_ h: Harness) async throws {
        let job = try await h.submit("flaky", maxAttempts: 3)
        let claimed = try await h.claim(job.id)
        h.clock.advance(by: .seconds(1))
        let failedAt = h.clock.milliseconds
        let error = JobError(code: .outputUnwritable, message: "/out is full")
        #expect(error.retryable)
        #expect(try await h.handle(2).fail(claimed.lease, error: error, retryDelay: .seconds(10)))

        let waiting = try await h.fetch(job.id)
        #expect(waiting.status == .unknown)
        #expect(waiting.error == error)
        #expect(ms(waiting.runAt) == failedAt + 10_000, "runAt = now + retryDelay")
        #expect(waiting.attempt == 1)
        #expect(waiting.finishedAt == nil)
        #expect(waiting.result == nil)

        try await h.expectNothingClaimed("just failed, 10 s to wait")
        h.clock.advance(by: .milliseconds(9_999))
        try await h.expectNothingClaimed("1 ms before runAt")
        h.clock.advance(by: .milliseconds(2))
        let again = try await h.claim(job.id, as: workerB, on: 3)
        #expect(again.job.attempt == 2)
        #expect(again.lease.attempt == 2)
        #expect(again.job.status == .reading)
    }

    static func nonRetryableFailure(_ h: Harness) async throws {
        let job = try await h.submit("missing", maxAttempts: 3)
        let claimed = try await h.claim(job.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.fail(claimed.lease, error: finalError, retryDelay: .seconds(10)))
        let failed = try await h.fetch(job.id)
        #expect(failed.status == .failed)
        #expect(failed.error == finalError)
        #expect(ms(failed.finishedAt) == h.clock.milliseconds)
        #expect(failed.attempt == 1)
        #expect(failed.maxAttempts == 3)
        h.clock.advance(by: .seconds(3600))
        try await h.expectNothingClaimed("a failed job is never claimed")
        #expect(try await h.fetch(job.id).status == .failed)
    }

    static func attemptsExhausted(_ h: Harness) async throws {
        let job = try await h.submit("doomed", maxAttempts: 2)
        let first = try await h.claim(job.id)
        #expect(try await h.store.fail(first.lease, error: retryableError, retryDelay: .zero))
        #expect(try await h.fetch(job.id).status == .unknown, "attempt 1 of 2 failed: another attempt")
        let second = try await h.claim(job.id, as: workerB)
        #expect(second.lease.attempt == 2)
        h.clock.advance(by: .seconds(1))
        let lastError = JobError(code: .internalError, message: "the encoder crashed again")
        #expect(try await h.store.fail(second.lease, error: lastError, retryDelay: .zero))
        let failed = try await h.fetch(job.id)
        #expect(failed.status == .failed, "attempt 2 of 2 failed: no attempt left")
        #expect(failed.error == lastError)
        #expect(failed.attempt == 2)
        #expect(ms(failed.finishedAt) == h.clock.milliseconds)
        try await h.expectNothingClaimed("attempts exhausted")
    }

    static func leaseExpiryWithNoAttemptsLeft(_ h: Harness) async throws {
        let job = try await h.submit("abandoned", maxAttempts: 1)
        let claimed = try await h.claim(job.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        try await h.expectNothingClaimed("the only attempt's lease expired")
        let failed = try await h.fetch(job.id)
        #expect(failed.status == .failed)
        #expect(failed.error?.code == .leaseLost)
        #expect(failed.error?.message.isEmpty == false)
        #expect(failed.attempt == 1)
        #expect(ms(failed.finishedAt) == h.clock.milliseconds)
        #expect(
            try await h.store.heartbeat(claimed.lease, progress: 0.5, tracks: [], extendBy: .seconds(30)) == .lost,
            "the dead worker comes back"
        )
        #expect(try await h.store.complete(claimed.lease, result: .null, tracks: []) == false)
        #expect(try await h.fetch(job.id).status == .failed)
    }

    static func poisonJob(_ h: Harness) async throws {
        let limit = JobStateMachine.crashLimit
        // Two crashes, then a hand-back (a drain): the count starts again.
        let drained = try await h.submit("drained", maxAttempts: 100)
        for _ in 1..<limit {
            _ = try await h.claim(drained.id, lease: .seconds(30))
            h.clock.advance(by: .seconds(31))
        }
        let handedBack = try await h.claim(drained.id, lease: .seconds(30))
        #expect(try await h.store.release(handedBack.lease))
        for _ in 1..<limit {
            _ = try await h.claim(drained.id, lease: .seconds(30))
            h.clock.advance(by: .seconds(31))
        }
        let stillRunning = try await h.claim(drained.id, lease: .seconds(30))
        #expect(
            try await h.store.complete(stillRunning.lease, result: .null, tracks: []),
            "crashes, a hand-back, crashes: not a poison job"
        )

        // Two crashes, a failure the worker reported (an input answering 503 every third
        // time), one more crash: a poison job all the same.
        let mixed = try await h.submit("mixed", maxAttempts: 100)
        for _ in 1..<limit {
            _ = try await h.claim(mixed.id, lease: .seconds(30))
            h.clock.advance(by: .seconds(31))
        }
        let reported = try await h.claim(mixed.id, lease: .seconds(30))
        #expect(try await h.store.fail(reported.lease, error: Checks.retryableError, retryDelay: .zero))
        _ = try await h.claim(mixed.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        try await h.expectNothingClaimed("the job that crashed around a reported failure")
        #expect(try await h.fetch(mixed.id).error?.code == .workerCrashed)

        // `limit` crashes in a row with 97 attempts left: failed, set aside.
        let poison = try await h.submit("poison", maxAttempts: 100)
        for _ in 1...limit {
            _ = try await h.claim(poison.id, lease: .seconds(30))
            h.clock.advance(by: .seconds(31))
        }
        try await h.expectNothingClaimed("the poison job is not claimed a \(limit + 1)th time")
        let failed = try await h.fetch(poison.id)
        #expect(failed.status == .failed && failed.attempt == limit)
        #expect(failed.error?.code == .workerCrashed && failed.error?.retryable == false)
        #expect(failed.error?.message.contains("worker-a") == true, "the message names the last worker")
        await #expect(throws: JobStoreError.self) { try await h.handle(2).retry(poison.id) }
        #expect(try await h.fetch(poison.id).status == .failed, "a refused retry changes nothing")
        let forced = try await h.handle(2).retry(poison.id, force: true)
        #expect(forced.status == .unknown && forced.error == nil)
        // Forced: the count starts again (two more crashes do not fail it).
        for _ in 1..<limit {
            _ = try await h.claim(poison.id, lease: .seconds(30))
            h.clock.advance(by: .seconds(31))
        }
        let again = try await h.claim(poison.id, lease: .seconds(30))
        #expect(again.job.attempt == 2 * limit)
    }
}
