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
