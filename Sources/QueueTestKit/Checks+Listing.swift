import Foundation
import Queue
import Testing

// Conformance checks: listing and workers.
extension Checks {
    static func list(_ h: Harness) async throws {
        var ids: [JobID] = []
        for index in 0..<5 {
            ids.append(try await h.submit("job-\(index)", on: index).id)
            h.clock.advance(by: .milliseconds(1))
        }
        // job-0 completed, job-1 running, job-2 and job-3 queued, job-4 cancelled.
        let claimed = try await h.store.claim(as: workerA, limit: 2, lease: .seconds(30))
        #expect(claimed.map(\.job.id) == [ids[0], ids[1]])
        if let first = claimed.first {
            #expect(try await h.store.complete(first.lease, result: .object([:]), tracks: []))
        }
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
            #expect(
                try await h.handle(index).statusCounts() == [.unknown: 2, .reading: 1, .completed: 1, .cancelled: 1],
                "counts on handle \(index)"
            )
        }
    }

    static func listPages(_ h: Harness) async throws {
        func submit(_ name: String, owner: String?, on index: Int) async throws -> Job {
            var request = Harness.request(name, priority: 0, maxAttempts: 1, key: nil)
            request.owner = owner
            let job = try await h.handle(index).submit(request).job
            #expect(job.owner == owner)
            return job
        }
        var submitted: [Job] = []
        for index in 0..<7 {
            submitted.append(try await submit("mine-\(index)", owner: "key-a", on: index))
            _ = try await submit("theirs-\(index)", owner: "key-b", on: index + 1)
            _ = try await submit("cli-\(index)", owner: nil, on: index + 2)
            // Two jobs in the same millisecond now and then: the id breaks the tie.
            if index % 2 == 0 { h.clock.advance(by: .milliseconds(1)) }
        }
        // Newest first: by creation time, then by id within a millisecond.
        let mine = submitted.sorted {
            ($0.createdAt.milliseconds, $0.id.rawValue) > ($1.createdAt.milliseconds, $1.id.rawValue)
        }
        .map(\.id)
        #expect(try await h.store.jobs(JobQuery(owner: "key-a", limit: 100)).map(\.id) == mine)
        #expect(try await h.store.jobs(JobQuery(limit: 100)).count == 21)

        // Pages of 3 while new jobs keep arriving: every job of before the first page exactly
        // once, none of the new ones (they sort before the cursor).
        var seen: [JobID] = []
        var cursor: JobQuery.Cursor?
        for page in 0..<10 {
            let jobs = try await h.handle(page).jobs(JobQuery(owner: "key-a", after: cursor, limit: 3))
            seen += jobs.map(\.id)
            guard let last = jobs.last else { break }
            #expect(jobs.allSatisfy { $0.owner == "key-a" })
            cursor = JobQuery.Cursor(createdAt: last.createdAt.milliseconds, id: last.id)
            h.clock.advance(by: .milliseconds(1))
            _ = try await submit("late-\(page)", owner: "key-a", on: page)
        }
        #expect(seen == mine, "each job once, newest first")
        let completed = try await h.store.jobs(JobQuery(status: .completed, owner: "key-a", limit: 100))
        #expect(completed.isEmpty)
        let stored = try #require(try await h.handle(1).job(submitted[0].id))
        #expect(stored.owner == "key-a")

        // Watched jobs read at once: only the ids asked for that exist (and match the other filters).
        let watched = [submitted[2].id, submitted[5].id, JobID("00000000-0000-0000-0000-000000000000")]
        let read = try await h.handle(2).jobs(JobQuery(ids: watched, limit: 10))
        #expect(Set(read.map(\.id)) == [submitted[2].id, submitted[5].id])
        #expect(try await h.store.jobs(JobQuery(owner: "key-b", ids: watched, limit: 10)).isEmpty)
        #expect(try await h.store.jobs(JobQuery(ids: [], limit: 10)).isEmpty)
    }

    static func apiKeys(_ h: Harness) async throws {
        let stores = h.stores.compactMap { $0 as? any APIKeyStore }
        try #require(stores.count == h.stores.count, "the store does not keep API keys")
        let created = Date(milliseconds: TestClock.defaultStart.milliseconds)
        let first = APIKey(id: "k1", name: "ingest", scope: .submit, createdAt: created, maxPriority: 50)
        let second = APIKey(id: "k2", name: "dashboard", scope: .read, createdAt: created.addingTimeInterval(1))
        try await stores[0].createAPIKey(first, secretHash: "aa")
        try await stores[1 % stores.count].createAPIKey(second, secretHash: "bb")
        await #expect(throws: (any Error).self, "a second key with the same id") {
            try await stores[0].createAPIKey(first, secretHash: "cc")
        }
        let read = try #require(try await stores[2 % stores.count].apiKey(id: "k1"))
        #expect(read.key == first && read.secretHash == "aa")
        #expect(try await stores[0].apiKey(id: "nope") == nil)
        #expect(try await stores[0].apiKeys() == [first, second])

        let revokedAt = created.addingTimeInterval(60)
        #expect(try await stores[0].revokeAPIKey(id: "k1", at: revokedAt))
        #expect(try await stores[1 % stores.count].revokeAPIKey(id: "k1", at: revokedAt) == false, "revoked twice")
        #expect(try await stores[0].revokeAPIKey(id: "nope", at: revokedAt) == false)
        #expect(try await stores[0].apiKey(id: "k1")?.key.revokedAt == revokedAt)
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
