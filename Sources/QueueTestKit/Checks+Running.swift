import Foundation
import Queue
import Testing

// Conformance checks: running.
extension Checks {
    static func heartbeat(_ h: Harness) async throws {
        let job = try await h.submit("beating")
        let claimed = try await h.claim(job.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(20))
        let state = try await h.handle(1).heartbeat(
            claimed.lease,
            progress: 0.25,
            tracks: [videoTrack, audioTrack],
            extendBy: .seconds(30)
        )
        #expect(state == .held(cancelRequested: false))
        var fetched = try await h.fetch(job.id)
        #expect(fetched.progress == 0.25)
        #expect(fetched.tracks == [videoTrack, audioTrack])

        h.clock.advance(by: .seconds(20))  // 40 s after the claim: past the first lease, within the renewed one
        try await h.expectNothingClaimed("the heartbeat at 20 s renewed the lease until 50 s")
        fetched = try await h.fetch(job.id)
        #expect(fetched.status == .reading)
        #expect(fetched.worker == "worker-a")
        #expect(fetched.attempt == 1)

        var audioDone = audioTrack
        audioDone.status = .completed
        audioDone.read = 132_300
        let second = try await h.handle(2).heartbeat(
            claimed.lease,
            progress: 0.5,
            tracks: [videoTrack, audioDone],
            extendBy: .seconds(30)
        )
        #expect(second == .held(cancelRequested: false))
        fetched = try await h.fetch(job.id, on: 3)
        #expect(fetched.progress == 0.5)
        #expect(fetched.tracks == [videoTrack, audioDone], "the latest heartbeat's tracks replace the earlier ones")

        // The lease runs from the last heartbeat (at 40 s, until 70 s), not for ever.
        h.clock.advance(by: .seconds(31))
        let reclaimed = try await h.handle(3).claim(as: workerB, limit: 10, lease: .seconds(30))
        #expect(reclaimed.map(\.job.id) == [job.id], "the lease renewed at 40 s for 30 s has expired at 71 s")
        #expect(reclaimed.first?.job.attempt == 2)
    }

    /// A job claimed by worker A whose lease expired and was claimed again by worker B.
    private static func reclaimed(_ h: Harness) async throws -> (job: JobID, old: Lease, new: ClaimedJob) {
        let job = try await h.submit("reclaimed")
        let first = try await h.claim(job.id, as: workerA, lease: .seconds(30), on: 0)
        h.clock.advance(by: .seconds(29))
        try await h.expectNothingClaimed("the lease has 1 s left")
        h.clock.advance(by: .seconds(2))
        let second = try await h.claim(job.id, as: workerB, lease: .seconds(30), on: 1)
        return (job.id, first.lease, second)
    }

    static func leaseExpiryAndReclaim(_ h: Harness) async throws {
        let (id, old, new) = try await reclaimed(h)
        #expect(new.job.attempt == 2)
        #expect(new.lease.attempt == 2)
        #expect(new.lease.token != old.token, "a new claim has a new token")
        #expect(new.job.worker == "worker-b")
        #expect(new.lease.worker == "worker-b")
        #expect(ms(new.job.startedAt) == h.clock.milliseconds)
        let fetched = try await h.fetch(id)
        #expect(fetched.status == .reading)
        #expect(fetched.worker == "worker-b")
        #expect(fetched.attempt == 2)
        #expect(ms(fetched.startedAt) == h.clock.milliseconds)
    }

    static func staleWorkerFencing(_ h: Harness) async throws {
        let (id, old, new) = try await reclaimed(h)
        let newState = try await h.handle(1).heartbeat(
            new.lease,
            progress: 0.3,
            tracks: [videoTrack],
            extendBy: .seconds(30)
        )
        #expect(newState == .held(cancelRequested: false))

        let staleTracks = [
            JobTrack(
                index: 0,
                sourceIndex: 0,
                mediaType: "video",
                status: .completed,
                codec: "h264",
                read: 999,
                written: 999
            )
        ]
        #expect(
            try await h.store.heartbeat(old, progress: 0.9, tracks: staleTracks, extendBy: .seconds(30)) == .lost,
            "stale heartbeat"
        )
        #expect(
            try await h.store.complete(old, result: .object(["output": .string("/stale")]), tracks: staleTracks)
                == false,
            "stale complete"
        )
        #expect(try await h.store.fail(old, error: finalError, retryDelay: .zero) == false, "stale fail (final)")
        #expect(
            try await h.store.fail(old, error: retryableError, retryDelay: .zero) == false,
            "stale fail (retryable)"
        )
        #expect(try await h.store.confirmCancelled(old) == false, "stale confirmCancelled")
        #expect(try await h.store.release(old) == false, "stale release")

        let job = try await h.fetch(id)
        #expect(job.status == .reading)
        #expect(job.worker == "worker-b")
        #expect(job.attempt == 2)
        #expect(job.result == nil)
        #expect(job.error == nil)
        #expect(job.finishedAt == nil)
        #expect(job.progress == 0.3)
        #expect(job.tracks == [videoTrack])
        #expect(job.cancelRequested == false)

        // The new worker still holds the job, and can finish it.
        #expect(
            try await h.handle(1).heartbeat(new.lease, progress: 0.6, tracks: [videoTrack], extendBy: .seconds(30))
                == .held(cancelRequested: false)
        )
        #expect(
            try await h.handle(1).complete(
                new.lease,
                result: .object(["output": .string("/out/reclaimed.mp4")]),
                tracks: []
            )
        )
        #expect(try await h.fetch(id).status == .completed)
    }

    static func complete(_ h: Harness) async throws {
        let job = try await h.submit("done")
        let first = try await h.claim(job.id)
        #expect(
            try await h.store.fail(first.lease, error: retryableError, retryDelay: .zero),
            "a first attempt fails (retryable)"
        )
        #expect(try await h.fetch(job.id).error == retryableError)
        let second = try await h.claim(job.id, as: workerB)
        #expect(second.lease.attempt == 2)
        _ = try await h.store.heartbeat(
            second.lease,
            progress: 0.7,
            tracks: [videoTrack, audioTrack],
            extendBy: .seconds(30)
        )
        h.clock.advance(by: .seconds(3))

        let result: JSONValue = .object([
            "output": .string("/out/done.mp4"), "bytes": .number(1_234_567), "duration": .number(3.0),
            "actualRange": .object(["start": .number(0.96), "duration": .number(3.04)]),
            "tracks": .array([.object(["index": .number(0), "codec": .string("h264")])]), "faststart": .bool(true),
            "note": .null,
        ])
        #expect(try await h.handle(2).complete(second.lease, result: result, tracks: doneTracks))
        let done = try await h.fetch(job.id)
        #expect(done.status == .completed)
        #expect(done.progress == 1)
        #expect(done.result == result)
        #expect(done.tracks == doneTracks)
        #expect(ms(done.finishedAt) == h.clock.milliseconds)
        #expect(done.error == nil, "the first attempt's error is cleared")
        #expect(done.attempt == 2)
        #expect(done.worker == "worker-b")

        h.clock.advance(by: .seconds(1))
        #expect(
            try await h.store.complete(second.lease, result: .object(["output": .string("/again")]), tracks: [])
                == false,
            "second complete"
        )
        #expect(
            try await h.store.heartbeat(second.lease, progress: 0.1, tracks: [], extendBy: .seconds(30)) == .lost,
            "heartbeat after complete"
        )
        #expect(
            try await h.store.fail(second.lease, error: retryableError, retryDelay: .zero) == false,
            "fail after complete"
        )
        let after = try await h.fetch(job.id)
        #expect(after.status == .completed)
        #expect(after.result == result)
        #expect(after.tracks == doneTracks)
        #expect(ms(after.finishedAt) == ms(done.finishedAt))
        try await h.expectNothingClaimed("a completed job is never claimed")
    }
}
