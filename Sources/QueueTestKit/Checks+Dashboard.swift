import Foundation
import Queue
import Testing

// Conformance checks: the dashboard's sessions and audit trail.
extension Checks {
    static func dashboardSessions(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any DashboardStore }
        try #require(stores.count == h.stores.count, "the store does not keep dashboard sessions")
        let start = Date(milliseconds: TestClock.defaultStart.milliseconds)
        func session(_ id: String, key: String, from: TimeInterval, for lifetime: TimeInterval) -> DashboardSession {
            DashboardSession(
                idHash: id,
                keyID: key,
                csrfToken: "csrf-\(id)",
                createdAt: start.addingTimeInterval(from),
                expiresAt: start.addingTimeInterval(from + lifetime)
            )
        }
        let first = session("s1", key: "k1", from: 0, for: 60)
        try await stores[0].createSession(first)
        try await stores[1 % stores.count].createSession(session("s2", key: "k2", from: 0, for: 3600))
        // Read on another handle, before and at its expiry.
        #expect(try await stores[2 % stores.count].session(idHash: "s1", at: start.addingTimeInterval(59)) == first)
        #expect(try await stores[0].session(idHash: "s1", at: start.addingTimeInterval(60)) == nil, "expired")
        #expect(try await stores[0].session(idHash: "nope", at: start) == nil)
        await #expect(throws: (any Error).self, "a second session with the same id") {
            try await stores[0].createSession(session("s2", key: "k9", from: 1, for: 60))
        }
        // A new session sweeps the expired ones away; the live one stays.
        try await stores[0].createSession(session("s3", key: "k1", from: 120, for: 60))
        #expect(try await stores[0].session(idHash: "s1", at: start) == nil, "swept away, even read as of before")
        #expect(try await stores[1 % stores.count].session(idHash: "s2", at: start.addingTimeInterval(120)) != nil)
        // Signing out.
        #expect(try await stores[0].deleteSession(idHash: "s3"))
        #expect(try await stores[1 % stores.count].deleteSession(idHash: "s3") == false)
        #expect(try await stores[0].session(idHash: "s3", at: start.addingTimeInterval(121)) == nil)
    }

    static func auditTrail(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any DashboardStore }
        try #require(stores.count == h.stores.count, "the store does not keep an audit trail")
        let start = Date(milliseconds: TestClock.defaultStart.milliseconds)
        let (a, b) = (JobID("job-a"), JobID("job-b"))
        let records = [
            AuditRecord(at: start, keyID: "k1", action: "cancel", jobID: a, outcome: "cancelled"),
            AuditRecord(at: start, keyID: "k2", action: "retry", jobID: b, outcome: "queued"),
            AuditRecord(at: start.addingTimeInterval(1), keyID: "k1", action: "retry", jobID: a, outcome: "queued"),
        ]
        for (index, record) in records.enumerated() { try await stores[index % stores.count].recordAudit(record) }
        #expect(try await stores[0].auditRecords(job: nil, limit: 10) == records.reversed(), "newest first")
        #expect(try await stores[1 % stores.count].auditRecords(job: a, limit: 10) == [records[2], records[0]])
        #expect(try await stores[0].auditRecords(job: b, limit: 10) == [records[1]])
        #expect(try await stores[0].auditRecords(job: nil, limit: 2) == [records[2], records[1]])
        #expect(try await stores[0].auditRecords(job: JobID("none"), limit: 10).isEmpty)
    }
}

// Conformance checks: the fleet page's minutes.
extension Checks {
    static func fleetMinutes(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any FleetRecorder }
        try #require(stores.count == h.stores.count, "the store does not record minutes")
        // Three jobs: one completes and one fails 20 s after starting, 10 s after submission;
        // the third is cancelled while queued (it never started: no wait or run time).
        var ids: [JobID] = []
        for index in 0..<3 { ids.append(try await h.submit("minute-\(index)", maxAttempts: 1, on: index).id) }
        h.clock.advance(by: .seconds(10))
        let claimed = try await h.store.claim(as: workerA, limit: 2, lease: .seconds(60))
        try #require(claimed.count == 2)
        h.clock.advance(by: .seconds(20))
        #expect(try await h.store.complete(claimed[0].lease, result: .object([:]), tracks: []))
        #expect(try await h.handle(1).fail(claimed[1].lease, error: finalError, retryDelay: .zero))
        let unclaimed = try #require(ids.first { id in !claimed.contains { $0.job.id == id } })
        _ = try await h.store.cancel(unclaimed)
        let now = h.clock.now()
        let minute = MinuteSample.minute(of: now)
        try await stores[0].recordMinute(minute, at: now)
        var read = try await stores[1 % stores.count].minutes(from: minute - 5, through: minute + 5)
        #expect(
            read == [
                MinuteSample(
                    minute: minute,
                    completed: 1,
                    failed: 1,
                    cancelled: 1,
                    queued: 0,
                    running: 0,
                    waitP50: 10_000,
                    waitP95: 10_000,
                    runP50: 20_000,
                    runP95: 20_000
                )
            ]
        )
        // Recorded again later in the minute: replaced, with the queue as it is then.
        try await h.submit("minute-late", on: 2)
        h.clock.advance(by: .seconds(5))
        try await stores[2 % stores.count].recordMinute(minute, at: h.clock.now())
        read = try await stores[0].minutes(from: minute, through: minute)
        #expect(read.count == 1 && read.first?.queued == 1 && read.first?.oldestQueuedMilliseconds == 5_000)
        #expect(read.first?.completed == 1, "the ended jobs are counted again, not added")
        // A minute with nothing: recorded as zeros. Minutes past the retention are dropped.
        try await stores[0].recordMinute(minute - 1, at: h.clock.now())
        #expect(try await stores[0].minutes(from: minute - 1, through: minute - 1).first?.completed == 0)
        try await stores[1 % stores.count].recordMinute(minute + MinuteSample.retentionMinutes + 1, at: h.clock.now())
        let left = try await stores[0].minutes(from: minute - 10, through: minute + MinuteSample.retentionMinutes + 10)
        #expect(left.map(\.minute) == [minute + MinuteSample.retentionMinutes + 1], "old minutes were kept")
    }
}

// Conformance checks: a queued job's place in line.
extension Checks {
    static func queuedAhead(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any DashboardStore }
        try #require(stores.count == h.stores.count, "the store does not count a job's place in line")
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

    static func serverSecrets(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any DashboardStore }
        try #require(stores.count == h.stores.count, "the store keeps no server secrets")
        let first = try await stores[0].serverSecret("signin") { "made-first" }
        #expect(first == "made-first")
        #expect(try await stores[1 % stores.count].serverSecret("signin") { "made-again" } == "made-first")
        #expect(try await stores[0].serverSecret("other") { "other-value" } == "other-value", "secrets by name")
        // Asked for at once by several servers: one value wins, and every one of them gets it.
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<8 {
                group.addTask { try await stores[index % stores.count].serverSecret("race") { "value-\(index)" } }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(values.count == 1, "\(values)")
    }
}

// Conformance checks: the attempts a job's timeline shows.
extension Checks {
    static func attemptHistory(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any DashboardStore }
        try #require(stores.count == h.stores.count, "the store does not keep attempts")
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
        #expect(attempts.first?.errorCode == full.code.rawValue && attempts.first?.errorMessage == full.message)
        #expect(attempts.last?.endedAt.milliseconds == takenAt.milliseconds)
        #expect(attempts.last?.errorCode == "lease_lost")
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
        #expect(failed.map(\.outcome) == ["failed"] && failed.first?.errorCode == finalError.code.rawValue)
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
