import Foundation
import Queue
import Testing

// Conformance checks: cancel, retry, release.
extension Checks {
    static func cancelInEveryStatus(_ h: Harness) async throws {
        // reading: a cancel request, seen by heartbeat and cancellationRequests.
        let running = try await h.submit("running")
        let runningClaim = try await h.claim(running.id)
        let other = try await h.submit("other")
        let otherClaim = try await h.claim(other.id, as: workerB)
        h.clock.advance(by: .seconds(1))
        switch try await h.handle(3).cancel(running.id) {
        case .requested(let job):
            #expect(job.id == running.id)
            #expect(job.status == .reading)
            #expect(job.cancelRequested)
        case .cancelled(let job):
            Issue.record(
                "cancel of a running job cancelled it at once (status \(job.status)); expected a request to its worker"
            )
        }
        let requested = try await h.fetch(running.id)
        #expect(requested.status == .reading)
        #expect(requested.cancelRequested)
        #expect(try await h.fetch(other.id).cancelRequested == false)
        let requests = try await h.handle(1).cancellationRequests(among: [runningClaim.lease, otherClaim.lease])
        #expect(requests == [running.id])
        #expect(try await h.handle(1).cancellationRequests(among: [otherClaim.lease]) == [])
        #expect(try await h.handle(1).cancellationRequests(among: []) == [])
        #expect(
            try await h.store.heartbeat(runningClaim.lease, progress: 0.4, tracks: [], extendBy: .seconds(30))
                == .held(cancelRequested: true)
        )
        #expect(
            try await h.store.heartbeat(otherClaim.lease, progress: 0.4, tracks: [], extendBy: .seconds(30))
                == .held(cancelRequested: false)
        )
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.confirmCancelled(runningClaim.lease))
        let cancelledRunning = try await h.fetch(running.id)
        #expect(cancelledRunning.status == .cancelled)
        #expect(ms(cancelledRunning.finishedAt) == h.clock.milliseconds)
        #expect(
            try await h.store.heartbeat(runningClaim.lease, progress: 0.5, tracks: [], extendBy: .seconds(30)) == .lost
        )

        // completed and failed.
        let completed = try await h.submit("completed")
        let completedClaim = try await h.claim(completed.id)
        #expect(try await h.store.complete(completedClaim.lease, result: .object([:]), tracks: []))
        let failed = try await h.submit("failed")
        let failedClaim = try await h.claim(failed.id)
        #expect(try await h.store.fail(failedClaim.lease, error: finalError, retryDelay: .zero))

        // unknown: cancelled at once.
        let queued = try await h.submit("queued")
        h.clock.advance(by: .seconds(1))
        switch try await h.handle(2).cancel(queued.id) {
        case .cancelled(let job):
            #expect(job.id == queued.id)
            #expect(job.status == .cancelled)
            #expect(ms(job.finishedAt) == h.clock.milliseconds)
        case .requested(let job):
            Issue.record(
                "cancel of a queued job only requested it (status \(job.status)); expected it cancelled at once"
            )
        }
        let cancelledQueued = try await h.fetch(queued.id)
        #expect(cancelledQueued.status == .cancelled)
        #expect(ms(cancelledQueued.finishedAt) == h.clock.milliseconds)
        try await h.expectNothingClaimed("a cancelled job is never claimed")

        await h.expectStoreError(.conflict, status: .completed, "cancel of a completed job") {
            try await h.store.cancel(completed.id)
        }
        await h.expectStoreError(.conflict, status: .failed, "cancel of a failed job") {
            try await h.store.cancel(failed.id)
        }
        await h.expectStoreError(.conflict, status: .cancelled, "cancel of a cancelled (queued) job") {
            try await h.store.cancel(queued.id)
        }
        await h.expectStoreError(.conflict, status: .cancelled, "cancel of a cancelled (running) job") {
            try await h.store.cancel(running.id)
        }
        await h.expectStoreError(.notFound, "cancel of an unknown id") {
            try await h.store.cancel(JobID.make(at: h.clock.date))
        }
        #expect(try await h.fetch(completed.id).status == .completed)
        #expect(try await h.fetch(failed.id).status == .failed)
    }

    static func cancelOfRunningJobWhoseWorkerDied(_ h: Harness) async throws {
        let job = try await h.submit("orphan", maxAttempts: 3)
        let claimed = try await h.claim(job.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(5))
        guard case .requested = try await h.handle(1).cancel(job.id) else {
            Issue.record("cancel of a running job did not return .requested")
            return
        }
        try await h.expectNothingClaimed("the lease has 25 s left; the cancel is only requested")
        #expect(try await h.fetch(job.id).status == .reading)

        h.clock.advance(by: .seconds(26))  // the worker died: its lease expired
        try await h.expectNothingClaimed("a job whose cancel was requested is not run again when its worker dies")
        let cancelled = try await h.fetch(job.id)
        #expect(cancelled.status == .cancelled)
        #expect(ms(cancelled.finishedAt) == h.clock.milliseconds)
        #expect(cancelled.attempt == 1)
        #expect(try await h.store.heartbeat(claimed.lease, progress: 0.5, tracks: [], extendBy: .seconds(30)) == .lost)
        #expect(try await h.store.confirmCancelled(claimed.lease) == false, "the job ended without that worker")
    }

    /// A user's cancel wins over a worker that hands the job back or fails it retryably before it
    /// noticed the request: the job must not run again (as when its lease expires).
    static func cancelRequestSurvivesHandBack(_ h: Harness) async throws {
        let released = try await h.submit("released", maxAttempts: 3)
        let releasedClaim = try await h.claim(released.id)
        let failed = try await h.submit("failed", maxAttempts: 3)
        let failedClaim = try await h.claim(failed.id)
        for id in [released.id, failed.id] {
            guard case .requested = try await h.handle(1).cancel(id) else {
                Issue.record("cancel of a running job did not return .requested")
                return
            }
        }
        #expect(try await h.store.release(releasedClaim.lease))
        #expect(try await h.store.fail(failedClaim.lease, error: retryableError, retryDelay: .zero))

        let claimed = try await h.handle(2).claim(as: workerB, limit: 10, lease: .seconds(30))
        #expect(claimed.map(\.job.input) == [], "jobs whose cancellation was requested are claimed again")
        let afterRelease = try await h.fetch(released.id)
        #expect(
            afterRelease.status == .cancelled,
            "cancel requested, then the worker released the job: expected cancelled, is \(afterRelease.status)"
        )
        let afterFail = try await h.fetch(failed.id)
        // `JobStore.fail`: a retryable failure with attempts left ends `cancelled` when cancellation
        // was requested (the user asked for the job to stop; retrying it would ignore them).
        #expect(
            afterFail.status == .cancelled,
            "cancel requested, then a retryable failure: expected cancelled, is \(afterFail.status)"
        )
    }

    static func retry(_ h: Harness) async throws {
        // failed, attempts exhausted (2 of 2).
        let exhausted = try await h.submit("exhausted", maxAttempts: 2)
        for attempt in 1...2 {
            let claimed = try await h.claim(exhausted.id)
            #expect(claimed.lease.attempt == attempt)
            #expect(try await h.store.fail(claimed.lease, error: retryableError, retryDelay: .zero))
        }
        // failed at once (attempt 1 of 3).
        let final = try await h.submit("final", maxAttempts: 3)
        let finalClaim = try await h.claim(final.id)
        #expect(try await h.store.fail(finalClaim.lease, error: finalError, retryDelay: .zero))
        // cancelled while queued (attempt 0 of 3) and while running (attempt 1 of 3).
        let queued = try await h.submit("queued", maxAttempts: 3)
        _ = try await h.store.cancel(queued.id)
        let running = try await h.submit("running", maxAttempts: 3)
        let runningClaim = try await h.claim(running.id)
        _ = try await h.store.cancel(running.id)
        #expect(try await h.store.confirmCancelled(runningClaim.lease))
        #expect(try await h.fetch(exhausted.id).status == .failed)
        #expect(try await h.fetch(final.id).status == .failed)
        #expect(try await h.fetch(queued.id).status == .cancelled)
        #expect(try await h.fetch(running.id).status == .cancelled)
        h.clock.advance(by: .seconds(1))

        func checkRetried(_ job: Job, attempt: Int, maxAttempts: Int, _ source: String) {
            #expect(job.status == .unknown, "\(source)")
            #expect(job.attempt == attempt, "\(source): the attempt count is kept")
            #expect(job.maxAttempts == maxAttempts, "\(source): the job gets its original number of attempts once more")
            #expect(job.error == nil, "\(source)")
            #expect(job.result == nil, "\(source)")
            #expect(job.finishedAt == nil, "\(source)")
            #expect(job.cancelRequested == false, "\(source)")
            #expect(ms(job.runAt)! <= h.clock.milliseconds, "\(source): claimable now")
        }

        // failed (exhausted) → unknown: 2 attempts used, 2 more; claimable, as attempt 3.
        checkRetried(try await h.handle(1).retry(exhausted.id), attempt: 2, maxAttempts: 4, "retry's job (exhausted)")
        checkRetried(try await h.fetch(exhausted.id, on: 2), attempt: 2, maxAttempts: 4, "job(id) (exhausted)")
        let exhaustedAgain = try await h.claim(exhausted.id, as: workerB)
        #expect(exhaustedAgain.lease.attempt == 3)
        #expect(try await h.store.complete(exhaustedAgain.lease, result: .object([:]), tracks: []))

        // failed at attempt 1 of 3: 3 attempts more (maxAttempts 1 + 3).
        checkRetried(try await h.store.retry(final.id), attempt: 1, maxAttempts: 4, "retry's job (final failure)")
        let finalAgain = try await h.claim(final.id)
        #expect(finalAgain.lease.attempt == 2)
        await h.expectStoreError(.conflict, status: .reading, "retry of a running job") {
            try await h.store.retry(final.id)
        }

        // cancelled while queued: 0 attempts used, 3 left; while running: 1 used, 3 more.
        checkRetried(
            try await h.store.retry(queued.id),
            attempt: 0,
            maxAttempts: 3,
            "retry's job (cancelled while queued)"
        )
        let queuedAgain = try await h.claim(queued.id)
        #expect(queuedAgain.lease.attempt == 1)
        checkRetried(
            try await h.store.retry(running.id),
            attempt: 1,
            maxAttempts: 4,
            "retry's job (cancelled while running)"
        )
        let runningAgain = try await h.claim(running.id)
        #expect(runningAgain.lease.attempt == 2)

        await h.expectStoreError(.conflict, status: .completed, "retry of a completed job") {
            try await h.store.retry(exhausted.id)
        }
        let fresh = try await h.submit("fresh")
        await h.expectStoreError(.conflict, status: .unknown, "retry of a queued job") {
            try await h.store.retry(fresh.id)
        }
        await h.expectStoreError(.notFound, "retry of an unknown id") {
            try await h.store.retry(JobID.make(at: h.clock.date))
        }
        #expect(try await h.fetch(fresh.id).status == .unknown)
        #expect(try await h.fetch(exhausted.id).status == .completed)
    }

    static func release(_ h: Harness) async throws {
        // One attempt only: releasing must not use it up.
        let job = try await h.submit("handed-back", maxAttempts: 1)
        let first = try await h.claim(job.id, lease: .seconds(30))
        _ = try await h.store.heartbeat(first.lease, progress: 0.4, tracks: [videoTrack], extendBy: .seconds(30))
        h.clock.advance(by: .seconds(2))
        #expect(try await h.handle(1).release(first.lease))
        let released = try await h.fetch(job.id)
        #expect(released.status == .unknown)
        #expect(released.cancelRequested == false)
        #expect(released.finishedAt == nil)
        #expect(released.error == nil)
        #expect(ms(released.runAt)! <= h.clock.milliseconds, "claimable at once")
        #expect(try await h.store.release(first.lease) == false, "a second release with the same lease")

        let second = try await h.claim(job.id, as: workerB, on: 2)  // no time has passed
        #expect(second.lease.attempt == first.lease.attempt, "a released attempt is not counted")
        #expect(second.job.attempt == first.lease.attempt)
        #expect(second.lease.token != first.lease.token)
        #expect(second.job.worker == "worker-b")
        #expect(try await h.store.heartbeat(first.lease, progress: 0.5, tracks: [], extendBy: .seconds(30)) == .lost)

        #expect(try await h.store.release(second.lease))
        let third = try await h.claim(job.id, on: 3)
        #expect(third.lease.attempt == 1, "released twice, still attempt 1 of 1")
        #expect(try await h.store.complete(third.lease, result: .object([:]), tracks: []))
        #expect(try await h.fetch(job.id).status == .completed)
    }
}
