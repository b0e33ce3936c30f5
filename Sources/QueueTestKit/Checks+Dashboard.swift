import Foundation
import Queue
import Testing

// Conformance checks: the dashboard's sessions and audit trail.
extension DashboardChecks {
    static func dashboardSessions(_ h: DashboardHarness) async throws {
        let stores = h.stores
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

    static func auditTrail(_ h: DashboardHarness) async throws {
        let stores = h.stores
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
extension DashboardChecks {
    static func fleetMinutes(_ h: DashboardHarness) async throws {
        let stores = h.stores
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

// Dashboard storage checks: the secrets the servers share.
extension DashboardChecks {
    static func serverSecrets(_ h: DashboardHarness) async throws {
        let stores = h.stores
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
