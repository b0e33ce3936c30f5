import Foundation
import Queue
import Testing

/// The checks of `JobStoreConformance.Check`, one function each. Every check starts on an empty
/// database with the clock at `TestClock.defaultStart`, and asserts exact values.
enum Checks {
    static let workerA = Harness.workerA
    static let workerB = Harness.workerB

    static let videoTrack = JobTrack(index: 0, sourceIndex: 0, mediaType: "video", status: .reading, codec: "h264", read: 120, written: 118)
    static let audioTrack = JobTrack(index: 1, sourceIndex: 2, mediaType: "audio", status: .reading, codec: "aac", read: 88_200, written: 86_016)
    static let doneTracks = [
        JobTrack(index: 0, sourceIndex: 0, mediaType: "video", status: .completed, codec: "h264", read: 90, written: 90),
        JobTrack(index: 1, sourceIndex: 1, mediaType: "audio", status: .completed, codec: nil, read: 132_300, written: 132_300),
    ]

    static let retryableError = JobError(code: "internal", message: "the encoder crashed", retryable: true)
    static let finalError = JobError(code: "input_not_found", message: "/data/in.mov does not exist", retryable: false)

    // MARK: Submitting and reading

    static func submitRoundTrip(_ h: Harness) async throws {
        let settings: JSONValue = .object([
            "name": .string("low"),
            "video": .object([
                "codec": .string("libx264"), "maxWidth": .number(426), "maxHeight": .number(240), "bitrate": .number(300_000),
                "crf": .null, "scale": .number(0.5),
            ]),
            "audio": .object(["channels": .number(1), "bitrate": .number(64_000), "sampleRate": .number(44_100), "zero": .number(0)]),
            "faststart": .bool(true),
            "hevc": .bool(false),
            "extra": .array([.string("a/b"), .number(-1.25), .bool(true), .null, .array([]), .object([:])]),
        ])
        let request = JobRequest(
            kind: .export, input: "/data/in put/talk ü.mov", output: "/out/clip.mp4", preset: "low", presetSettings: settings,
            format: "mp4", range: Job.Range(start: 1.5, duration: 3.25), priority: 7, maxAttempts: 5, idempotencyKey: "round-trip-key",
            metadata: ["customer": "acme", "note": "ünïcode ✓, \"quoted\""], webhook: "https://user:pass@app.example/hooks/export?x=1"
        )
        let createdAt = h.clock.milliseconds
        let (submitted, created) = try await h.store.submit(request)
        #expect(created)

        func checkFields(_ job: Job, _ source: String) {
            #expect(job.id.isWellFormed, "\(source): id \(job.id)")
            #expect(job.id.rawValue == job.id.rawValue.lowercased(), "\(source): id \(job.id)")
            #expect(job.kind == .export, "\(source)")
            #expect(job.status == .unknown, "\(source)")
            #expect(job.input == "/data/in put/talk ü.mov", "\(source)")
            #expect(job.output == "/out/clip.mp4", "\(source)")
            #expect(job.preset == "low", "\(source)")
            #expect(job.presetSettings == settings, "\(source)")
            #expect(job.format == "mp4", "\(source)")
            #expect(job.range == Job.Range(start: 1.5, duration: 3.25), "\(source)")
            #expect(job.priority == 7, "\(source)")
            #expect(job.attempt == 0, "\(source)")
            #expect(job.maxAttempts == 5, "\(source)")
            #expect(job.progress == 0, "\(source)")
            #expect(job.tracks == [], "\(source)")
            #expect(job.result == nil, "\(source)")
            #expect(job.error == nil, "\(source)")
            #expect(job.webhook == "https://user:pass@app.example/hooks/export?x=1", "\(source): the store keeps the URL it must call")
            #expect(job.metadata == ["customer": "acme", "note": "ünïcode ✓, \"quoted\""], "\(source)")
            #expect(job.idempotencyKey == "round-trip-key", "\(source)")
            #expect(job.worker == nil, "\(source)")
            #expect(job.cancelRequested == false, "\(source)")
            #expect(ms(job.createdAt) == createdAt, "\(source): createdAt")
            #expect(ms(job.runAt) == createdAt, "\(source): runAt")
            #expect(job.startedAt == nil, "\(source)")
            #expect(job.finishedAt == nil, "\(source)")
        }
        checkFields(submitted, "submit's job")
        h.clock.advance(by: .seconds(5))
        for index in h.stores.indices {
            let fetched = try await h.fetch(submitted.id, on: index)
            checkFields(fetched, "job(id) on handle \(index)")
            #expect(fetched == submitted, "job(id) on handle \(index) differs from what submit returned")
        }

        // The optional fields absent, or partly absent.
        let bare = JobRequest(input: "/data/bare.mov", output: "/out/bare.mp4", preset: "passthrough")
        let bareJob = try await h.fetch(try await h.handle(1).submit(bare).job.id)
        #expect(bareJob.presetSettings == .null)
        #expect(bareJob.format == nil)
        #expect(bareJob.range == nil)
        #expect(bareJob.priority == 0)
        #expect(bareJob.maxAttempts == 3)
        #expect(bareJob.webhook == nil)
        #expect(bareJob.metadata == [:])
        #expect(bareJob.idempotencyKey == nil)
        #expect(ms(bareJob.createdAt) == h.clock.milliseconds)
        let toTheEnd = JobRequest(input: "/data/end.mov", output: "/out/end.m4a", preset: "m4a", format: "m4a", range: Job.Range(start: 0, duration: nil), priority: -3)
        let toTheEndJob = try await h.fetch(try await h.store.submit(toTheEnd).job.id)
        #expect(toTheEndJob.range == Job.Range(start: 0, duration: nil))
        #expect(toTheEndJob.priority == -3)
        #expect(toTheEndJob.format == "m4a")
        #expect(Set([submitted.id, bareJob.id, toTheEndJob.id]).count == 3, "every job has its own id")

        let unknown = try await h.store.job(JobID.make(at: h.clock.date))
        #expect(unknown == nil, "job(id) of an id never submitted")
    }

    static func idempotencyKey(_ h: Harness) async throws {
        let first = try await h.store.submit(Harness.request("first", priority: 1, key: "key-1"))
        #expect(first.created)
        h.clock.advance(by: .seconds(1))

        var other = Harness.request("second", priority: 9, maxAttempts: 7, key: "key-1")
        other.preset = "medium"
        other.metadata = ["different": "yes"]
        for index in h.stores.indices {
            let again = try await h.handle(index).submit(other)
            #expect(again.created == false, "same key on handle \(index)")
            #expect(again.job.id == first.job.id, "same key on handle \(index)")
            #expect(again.job.input == "/data/first.mov", "the existing job, not the new request")
            #expect(again.job.priority == 1)
            #expect(again.job.maxAttempts == 3)
            #expect(again.job.preset == "low")
            #expect(again.job.metadata == [:])
            #expect(ms(again.job.createdAt) == ms(first.job.createdAt))
        }

        let otherKey = try await h.handle(1).submit(Harness.request("third", key: "key-2"))
        #expect(otherKey.created)
        let noKey1 = try await h.store.submit(Harness.request("fourth"))
        let noKey2 = try await h.store.submit(Harness.request("fourth"))
        #expect(noKey1.created && noKey2.created, "no key: every submit creates a job")
        let ids = [first.job.id, otherKey.job.id, noKey1.job.id, noKey2.job.id]
        #expect(Set(ids).count == 4)
        let all = try await h.store.jobs(status: nil, limit: 100)
        #expect(all.count == 4, "jobs in the table: \(all.map(\.input))")
        #expect(Set(all.map(\.id)) == Set(ids))

        // The same new key from eight processes at once: one job, created once.
        let racing = try await withThrowingTaskGroup(of: (job: Job, created: Bool).self) { group in
            for task in 0..<8 {
                let store = h.handle(task)
                group.addTask { try await store.submit(Harness.request("racer-\(task)", key: "key-race")) }
            }
            var results: [(job: Job, created: Bool)] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(racing.filter(\.created).count == 1, "exactly one concurrent submit creates the job")
        #expect(Set(racing.map(\.job.id)).count == 1, "every concurrent submit returns the same job")
        #expect(try await h.store.jobs(status: nil, limit: 100).count == 5)
    }

    // MARK: Claiming

    static func claimOrder(_ h: Harness) async throws {
        let long = Duration.seconds(3600)
        // The oldest job with the highest priority, but waiting 60 s for its retry: skipped.
        let waiting = try await h.submit("waiting", priority: 100)
        let first = try await h.claim(waiting.id, lease: long)
        #expect(try await h.store.fail(first.lease, error: retryableError, retryDelay: .seconds(60)))
        h.clock.advance(by: .milliseconds(1))

        let specs: [(String, Int)] = [("p0-a", 0), ("p5-a", 5), ("p0-b", 0), ("pm1", -1), ("p5-b", 5), ("p10", 10), ("p0-c", 0)]
        for (index, (name, priority)) in specs.enumerated() {
            try await h.submit(name, priority: priority, on: index)
            h.clock.advance(by: .milliseconds(1))
        }
        func inputs(_ claimed: [ClaimedJob]) -> [String] { claimed.map { String($0.job.input.dropFirst(6).dropLast(4)) } }

        let three = try await h.handle(1).claim(as: workerA, limit: 3, lease: long)
        #expect(inputs(three) == ["p10", "p5-a", "p5-b"], "limit 3: the three first, in order")
        var oneByOne: [String] = []
        for index in 0..<3 {
            let one = try await h.handle(index).claim(as: workerB, limit: 1, lease: long)
            #expect(one.count == 1, "limit 1")
            oneByOne += inputs(one)
        }
        #expect(oneByOne == ["p0-a", "p0-b", "p0-c"], "equal priority: oldest first")
        let rest = try await h.handle(2).claim(as: workerA, limit: 10, lease: long)
        #expect(inputs(rest) == ["pm1"], "limit 10 with one job left")
        try await h.expectNothingClaimed("a job whose runAt is 60 s away is not claimed")
        #expect(try await h.fetch(waiting.id).status == .unknown)

        h.clock.advance(by: .seconds(60))
        let late = try await h.handle(3).claim(as: workerB, limit: 10, lease: long)
        #expect(inputs(late) == ["waiting"], "runAt has come")
    }

    static func expiredLeaseClaimOrder(_ h: Harness) async throws {
        func inputs(_ claimed: [ClaimedJob]) -> [String] { claimed.map { String($0.job.input.dropFirst(6).dropLast(4)) } }
        let low = try await h.submit("expired-low", priority: 1)
        _ = try await h.claim(low.id, lease: .seconds(30))
        h.clock.advance(by: .milliseconds(1))
        let oldHigh = try await h.submit("queued-high", priority: 5)
        h.clock.advance(by: .milliseconds(1))
        try await h.submit("queued-low", priority: 1)
        h.clock.advance(by: .seconds(31))  // worker A died: its lease expired
        let first = try await h.handle(2).claim(as: workerB, limit: 1, lease: .seconds(30))
        #expect(inputs(first) == ["queued-high"], "priority 5 queued before priority 1 expired")
        #expect(first.first?.job.id == oldHigh.id)
        let second = try await h.handle(3).claim(as: workerB, limit: 1, lease: .seconds(30))
        #expect(inputs(second) == ["expired-low"], "equal priority: the older job, whose worker died")
        #expect(second.first?.job.attempt == 2)
        let rest = try await h.handle(1).claim(as: workerB, limit: 10, lease: .seconds(30))
        #expect(inputs(rest) == ["queued-low"])
    }

    static func claimResult(_ h: Harness) async throws {
        var ids: [JobID] = []
        for index in 0..<3 {
            ids.append(try await h.submit("job-\(index)", maxAttempts: 4).id)
            h.clock.advance(by: .milliseconds(1))
        }
        h.clock.advance(by: .seconds(5))
        let now = h.clock.milliseconds
        let claimed = try await h.handle(1).claim(as: workerA, limit: 5, lease: .seconds(30))
        #expect(claimed.map(\.job.id) == ids, "all three, oldest first")
        for item in claimed {
            for (source, job) in [("claim's job", item.job), ("job(id)", try await h.fetch(item.job.id, on: 2))] {
                #expect(job.status == .reading, "\(source)")
                #expect(job.attempt == 1, "\(source)")
                #expect(job.maxAttempts == 4, "\(source)")
                #expect(job.worker == "worker-a", "\(source)")
                #expect(ms(job.startedAt) == now, "\(source): startedAt")
                #expect(job.finishedAt == nil, "\(source)")
                #expect(job.cancelRequested == false, "\(source)")
                #expect(job.progress == 0, "\(source)")
                #expect(job.error == nil, "\(source)")
            }
            #expect(item.lease.jobID == item.job.id)
            #expect(item.lease.attempt == 1)
            #expect(item.lease.worker == "worker-a")
            #expect(!item.lease.token.isEmpty)
        }
        #expect(Set(claimed.map(\.lease.token)).count == 3, "every lease has its own token: \(claimed.map(\.lease.token))")
        try await h.expectNothingClaimed("every job is running")
    }

    static func noDoubleClaimUnderContention(_ h: Harness) async throws {
        var submitted: [JobID] = []
        for index in 0..<60 {
            submitted.append(try await h.submit("job-\(index)", priority: index % 3, on: index).id)
            if index % 7 == 0 { h.clock.advance(by: .milliseconds(1)) }
        }
        let perTask = try await withThrowingTaskGroup(of: (String, [ClaimedJob]).self) { group in
            for task in 0..<8 {
                let store = h.handle(task)
                let worker = WorkerIdentity(name: "worker-\(task)", host: "host-\(task % 4)", pid: Int32(1000 + task), version: "conformance")
                let limit = 1 + task % 3
                group.addTask {
                    var mine: [ClaimedJob] = []
                    for _ in 0..<200 {
                        let batch = try await store.claim(as: worker, limit: limit, lease: .seconds(600))
                        if batch.isEmpty { return (worker.name, mine) }
                        #expect(batch.count <= limit, "claim returned more than its limit \(limit)")
                        mine += batch
                        await Task.yield()
                    }
                    Issue.record("\(worker.name) still claimed jobs after 200 claims")
                    return (worker.name, mine)
                }
            }
            var results: [(String, [ClaimedJob])] = []
            for try await result in group { results.append(result) }
            return results
        }
        let claimed = perTask.flatMap { $0.1 }
        let ids = claimed.map(\.job.id)
        var seen: Set<JobID> = []
        let twice = ids.filter { !seen.insert($0).inserted }
        #expect(twice.count == 0, "\(twice.count) claims of jobs already claimed, e.g. \(twice.prefix(3))")
        #expect(claimed.count == 60)
        #expect(Set(ids) == Set(submitted), "missing: \(Set(submitted).subtracting(ids).count), extra: \(Set(ids).subtracting(submitted).count)")
        #expect(Set(claimed.map(\.lease.token)).count == claimed.count, "every claim has its own token")
        #expect(claimed.allSatisfy { $0.job.attempt == 1 && $0.lease.attempt == 1 }, "every job on attempt 1")
        var wrongWorker: [String] = []
        for (worker, jobs) in perTask {
            for item in jobs {
                let recorded = try await h.fetch(item.job.id).worker
                if item.job.worker != worker || recorded != worker {
                    wrongWorker.append("\(item.job.input): claimed by \(worker), claim says \(item.job.worker ?? "nil"), job says \(recorded ?? "nil")")
                }
            }
        }
        #expect(wrongWorker.count == 0, "the job records the worker that claimed it: \(wrongWorker.count) do not, e.g. \(wrongWorker.prefix(3))")
        let running = try await h.store.jobs(status: .reading, limit: 1000)
        #expect(running.count == 60)
        try await h.expectNothingClaimed("all 60 jobs are running")
    }

    // MARK: Running

    static func heartbeat(_ h: Harness) async throws {
        let job = try await h.submit("beating")
        let claimed = try await h.claim(job.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(20))
        let state = try await h.handle(1).heartbeat(claimed.lease, progress: 0.25, tracks: [videoTrack, audioTrack], extendBy: .seconds(30))
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
        let second = try await h.handle(2).heartbeat(claimed.lease, progress: 0.5, tracks: [videoTrack, audioDone], extendBy: .seconds(30))
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
        let newState = try await h.handle(1).heartbeat(new.lease, progress: 0.3, tracks: [videoTrack], extendBy: .seconds(30))
        #expect(newState == .held(cancelRequested: false))

        let staleTracks = [JobTrack(index: 0, sourceIndex: 0, mediaType: "video", status: .completed, codec: "h264", read: 999, written: 999)]
        #expect(try await h.store.heartbeat(old, progress: 0.9, tracks: staleTracks, extendBy: .seconds(30)) == .lost, "stale heartbeat")
        #expect(try await h.store.complete(old, result: .object(["output": .string("/stale")]), tracks: staleTracks) == false, "stale complete")
        #expect(try await h.store.fail(old, error: finalError, retryDelay: .zero) == false, "stale fail (final)")
        #expect(try await h.store.fail(old, error: retryableError, retryDelay: .zero) == false, "stale fail (retryable)")
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
        #expect(try await h.handle(1).heartbeat(new.lease, progress: 0.6, tracks: [videoTrack], extendBy: .seconds(30)) == .held(cancelRequested: false))
        #expect(try await h.handle(1).complete(new.lease, result: .object(["output": .string("/out/reclaimed.mp4")]), tracks: []))
        #expect(try await h.fetch(id).status == .completed)
    }

    static func complete(_ h: Harness) async throws {
        let job = try await h.submit("done")
        let first = try await h.claim(job.id)
        #expect(try await h.store.fail(first.lease, error: retryableError, retryDelay: .zero), "a first attempt fails (retryable)")
        #expect(try await h.fetch(job.id).error == retryableError)
        let second = try await h.claim(job.id, as: workerB)
        #expect(second.lease.attempt == 2)
        _ = try await h.store.heartbeat(second.lease, progress: 0.7, tracks: [videoTrack, audioTrack], extendBy: .seconds(30))
        h.clock.advance(by: .seconds(3))

        let result: JSONValue = .object([
            "output": .string("/out/done.mp4"), "bytes": .number(1_234_567), "duration": .number(3.0),
            "actualRange": .object(["start": .number(0.96), "duration": .number(3.04)]),
            "tracks": .array([.object(["index": .number(0), "codec": .string("h264")])]), "faststart": .bool(true), "note": .null,
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
        #expect(try await h.store.complete(second.lease, result: .object(["output": .string("/again")]), tracks: []) == false, "second complete")
        #expect(try await h.store.heartbeat(second.lease, progress: 0.1, tracks: [], extendBy: .seconds(30)) == .lost, "heartbeat after complete")
        #expect(try await h.store.fail(second.lease, error: retryableError, retryDelay: .zero) == false, "fail after complete")
        let after = try await h.fetch(job.id)
        #expect(after.status == .completed)
        #expect(after.result == result)
        #expect(after.tracks == doneTracks)
        #expect(ms(after.finishedAt) == ms(done.finishedAt))
        try await h.expectNothingClaimed("a completed job is never claimed")
    }

    // MARK: Failing

    static func retryableFailureWithBackoff(_ h: Harness) async throws {
        let job = try await h.submit("flaky", maxAttempts: 3)
        let claimed = try await h.claim(job.id)
        h.clock.advance(by: .seconds(1))
        let failedAt = h.clock.milliseconds
        let error = JobError(code: "output_unwritable", message: "/out is full")
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
        let lastError = JobError(code: "internal", message: "the encoder crashed again")
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
        #expect(failed.error?.code == "lease_lost")
        #expect(failed.error?.message.isEmpty == false)
        #expect(failed.attempt == 1)
        #expect(ms(failed.finishedAt) == h.clock.milliseconds)
        #expect(try await h.store.heartbeat(claimed.lease, progress: 0.5, tracks: [], extendBy: .seconds(30)) == .lost, "the dead worker comes back")
        #expect(try await h.store.complete(claimed.lease, result: .null, tracks: []) == false)
        #expect(try await h.fetch(job.id).status == .failed)
    }

    // MARK: Cancel, retry, release

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
            Issue.record("cancel of a running job cancelled it at once (status \(job.status)); expected a request to its worker")
        }
        let requested = try await h.fetch(running.id)
        #expect(requested.status == .reading)
        #expect(requested.cancelRequested)
        #expect(try await h.fetch(other.id).cancelRequested == false)
        let requests = try await h.handle(1).cancellationRequests(among: [runningClaim.lease, otherClaim.lease])
        #expect(requests == [running.id])
        #expect(try await h.handle(1).cancellationRequests(among: [otherClaim.lease]) == [])
        #expect(try await h.handle(1).cancellationRequests(among: []) == [])
        #expect(try await h.store.heartbeat(runningClaim.lease, progress: 0.4, tracks: [], extendBy: .seconds(30)) == .held(cancelRequested: true))
        #expect(try await h.store.heartbeat(otherClaim.lease, progress: 0.4, tracks: [], extendBy: .seconds(30)) == .held(cancelRequested: false))
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.confirmCancelled(runningClaim.lease))
        let cancelledRunning = try await h.fetch(running.id)
        #expect(cancelledRunning.status == .cancelled)
        #expect(ms(cancelledRunning.finishedAt) == h.clock.milliseconds)
        #expect(try await h.store.heartbeat(runningClaim.lease, progress: 0.5, tracks: [], extendBy: .seconds(30)) == .lost)

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
            Issue.record("cancel of a queued job only requested it (status \(job.status)); expected it cancelled at once")
        }
        let cancelledQueued = try await h.fetch(queued.id)
        #expect(cancelledQueued.status == .cancelled)
        #expect(ms(cancelledQueued.finishedAt) == h.clock.milliseconds)
        try await h.expectNothingClaimed("a cancelled job is never claimed")

        await h.expectStoreError(.conflict(.completed), "cancel of a completed job") { try await h.store.cancel(completed.id) }
        await h.expectStoreError(.conflict(.failed), "cancel of a failed job") { try await h.store.cancel(failed.id) }
        await h.expectStoreError(.conflict(.cancelled), "cancel of a cancelled (queued) job") { try await h.store.cancel(queued.id) }
        await h.expectStoreError(.conflict(.cancelled), "cancel of a cancelled (running) job") { try await h.store.cancel(running.id) }
        await h.expectStoreError(.notFound, "cancel of an unknown id") { try await h.store.cancel(JobID.make(at: h.clock.date)) }
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
        #expect(afterRelease.status == .cancelled, "cancel requested, then the worker released the job: expected cancelled, is \(afterRelease.status)")
        let afterFail = try await h.fetch(failed.id)
        // `JobStore.fail`: a retryable failure with attempts left ends `cancelled` when cancellation
        // was requested (the user asked for the job to stop; retrying it would ignore them).
        #expect(afterFail.status == .cancelled, "cancel requested, then a retryable failure: expected cancelled, is \(afterFail.status)")
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
        await h.expectStoreError(.conflict(.reading), "retry of a running job") { try await h.store.retry(final.id) }

        // cancelled while queued: 0 attempts used, 3 left; while running: 1 used, 3 more.
        checkRetried(try await h.store.retry(queued.id), attempt: 0, maxAttempts: 3, "retry's job (cancelled while queued)")
        let queuedAgain = try await h.claim(queued.id)
        #expect(queuedAgain.lease.attempt == 1)
        checkRetried(try await h.store.retry(running.id), attempt: 1, maxAttempts: 4, "retry's job (cancelled while running)")
        let runningAgain = try await h.claim(running.id)
        #expect(runningAgain.lease.attempt == 2)

        await h.expectStoreError(.conflict(.completed), "retry of a completed job") { try await h.store.retry(exhausted.id) }
        let fresh = try await h.submit("fresh")
        await h.expectStoreError(.conflict(.unknown), "retry of a queued job") { try await h.store.retry(fresh.id) }
        await h.expectStoreError(.notFound, "retry of an unknown id") { try await h.store.retry(JobID.make(at: h.clock.date)) }
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

    // MARK: Listing and workers

    static func list(_ h: Harness) async throws {
        var ids: [JobID] = []
        for index in 0..<5 {
            ids.append(try await h.submit("job-\(index)", on: index).id)
            h.clock.advance(by: .milliseconds(1))
        }
        // job-0 completed, job-1 running, job-2 and job-3 queued, job-4 cancelled.
        let claimed = try await h.store.claim(as: workerA, limit: 2, lease: .seconds(30))
        #expect(claimed.map(\.job.id) == [ids[0], ids[1]])
        if let first = claimed.first { #expect(try await h.store.complete(first.lease, result: .object([:]), tracks: [])) }
        _ = try await h.store.cancel(ids[4])

        for index in h.stores.indices {
            let all = try await h.handle(index).jobs(status: nil, limit: 100)
            #expect(all.map(\.id) == ids.reversed(), "newest first, on handle \(index)")
        }
        #expect(try await h.store.jobs(status: nil, limit: 2).map(\.id) == [ids[4], ids[3]], "limit 2")
        #expect(try await h.store.jobs(status: .unknown, limit: 100).map(\.id) == [ids[3], ids[2]])
        #expect(try await h.store.jobs(status: .unknown, limit: 1).map(\.id) == [ids[3]])
        #expect(try await h.store.jobs(status: .reading, limit: 100).map(\.id) == [ids[1]])
        #expect(try await h.store.jobs(status: .completed, limit: 100).map(\.id) == [ids[0]])
        #expect(try await h.store.jobs(status: .cancelled, limit: 100).map(\.id) == [ids[4]])
        #expect(try await h.store.jobs(status: .failed, limit: 100).map(\.id) == [])
        let statuses = try await h.store.jobs(status: nil, limit: 100).map(\.status)
        #expect(statuses == [.cancelled, .unknown, .unknown, .reading, .completed])
        for index in h.stores.indices {
            #expect(try await h.handle(index).statusCounts() == [.unknown: 2, .reading: 1, .completed: 1, .cancelled: 1], "counts on handle \(index)")
        }
    }

    static func workers(_ h: Harness) async throws {
        try await h.store.workerStarted(workerA)
        try await h.handle(1).workerStarted(workerB)
        h.clock.advance(by: .seconds(10))
        try await h.store.workerHeartbeat(workerA)
        try await h.handle(1).workerHeartbeat(workerB)
        // The same name again (a restarted process, maybe on another handle, pid or version).
        let restarted = WorkerIdentity(name: workerA.name, host: workerA.host, pid: 303, version: "conformance-2")
        try await h.handle(2).workerStarted(restarted)
        try await h.handle(2).workerStarted(restarted)
        h.clock.advance(by: .seconds(10))
        try await h.handle(2).workerHeartbeat(restarted)
        try await h.handle(2).workerStopped(restarted)
        try await h.handle(1).workerStopped(workerB)
        // Started again after stopping.
        try await h.store.workerStarted(workerB)
        try await h.store.workerHeartbeat(workerB)
        try await h.store.workerStopped(workerB)
        // The workers table is separate from the jobs.
        #expect(try await h.store.jobs(status: nil, limit: 10).isEmpty)
    }
}
