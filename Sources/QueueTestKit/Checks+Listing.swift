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

        // A tenant's counts (its dashboard): its own jobs only; nobody's is no jobs.
        #expect(try await h.store.statusCounts(owner: "key-a") == [.unknown: 10])
        #expect(try await h.handle(1).statusCounts(owner: "key-b") == [.unknown: 7])
        #expect(try await h.store.statusCounts(owner: "key-z").isEmpty)
        #expect(try await h.store.statusCounts() == [.unknown: 24])
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

// Conformance checks: the dashboard's conditions.
extension Checks {
    /// With `indexing`, the store's search index is brought up to date in steps and the
    /// answers checked after each (`DashboardStorageConformance.Check.searchIndex`).
    static func listConditions(_ h: Harness, indexing: (any DashboardStore)? = nil) async throws {
        // Twelve jobs over kinds, presets, priorities, inputs and times; some claimed by each worker.
        var jobs: [Job] = []
        let inputs = ["/data/Talk.MOV", "/data/talk_100%.mov", "/data/interview.mp4", "s3://media/Keynote.mov"]
        for index in 0..<12 {
            var request = Harness.request("cond-\(index)", priority: index % 3 * 5, maxAttempts: 1)
            request.kind = index % 4 == 0 ? "hls" : "export"
            request.preset = index % 2 == 0 ? "low" : "medium"
            request.input = inputs[index % inputs.count]
            request.output = "/out/cond-\(index).mp4"
            jobs.append(try await h.handle(index).submit(request).job)
            h.clock.advance(by: .milliseconds(10))
        }
        let byA = try await h.store.claim(as: workerA, limit: 2, lease: .seconds(30))
        let byB = try await h.handle(1).claim(as: workerB, limit: 1, lease: .seconds(30))
        #expect(byA.count == 2 && byB.count == 1)
        if let done = byA.first { #expect(try await h.store.complete(done.lease, result: .object([:]), tracks: [])) }
        // Read back: statuses and workers as the store has them now.
        let all = try await h.store.jobs(JobQuery(limit: 100))
        #expect(all.count == 12)
        let middle = jobs[6].createdAt.milliseconds
        let cases: [(String, [JobCondition])] = [
            ("status any of", [JobCondition(.status, .anyOf(["unknown", "reading"]))]),
            ("not status", [JobCondition(.status, .anyOf(["unknown"]), negated: true)]),
            ("kind", [JobCondition(.kind, .anyOf(["hls"]))]),
            ("preset and kind", [JobCondition(.preset, .anyOf(["low"])), JobCondition(.kind, .anyOf(["export"]))]),
            ("worker", [JobCondition(.worker, .anyOf([workerA.name]))]),
            ("not worker: the unclaimed too", [JobCondition(.worker, .anyOf([workerA.name]), negated: true)]),
            ("priority", [JobCondition(.priority, .anyOf(["5", "10"]))]),
            ("priority at least", [JobCondition(.priority, .atLeast(10))]),
            (
                "created window",
                [JobCondition(.created, .atLeast(middle)), JobCondition(.created, .below(middle + 30))]
            ),
            ("id", [JobCondition(.id, .anyOf([jobs[3].id.rawValue, jobs[7].id.rawValue]))]),
            ("text, any case", [JobCondition(.text, .containsAny(["talk"]))]),
            ("text in the output", [JobCondition(.text, .containsAny(["cond-1"]))]),
            ("text OR", [JobCondition(.text, .containsAny(["keynote", "interview"]))]),
            ("LIKE characters literally", [JobCondition(.input, .containsAny(["100%"]))]),
            ("an underscore is not a wildcard", [JobCondition(.input, .containsAny(["talk_1"]))]),
            ("_ matches nothing else", [JobCondition(.input, .containsAny(["a_k"]))]),
            ("not text", [JobCondition(.text, .containsAny(["talk"]), negated: true)]),
            ("output only", [JobCondition(.output, .containsAny(["cond-11"]))]),
            ("nothing any of", [JobCondition(.kind, .anyOf([]))]),
            ("a quote in a term", [JobCondition(.text, .containsAny(["ta\"lk"]))]),
            ("two terms", [JobCondition(.text, .containsAny(["data"])), JobCondition(.input, .containsAny(["mov"]))]),
        ]
        func check(_ stage: String) async throws {
            let all = try await h.store.jobs(JobQuery(limit: 100))
            for (index, (name, conditions)) in cases.enumerated() {
                let expected = all.filter { job in conditions.allSatisfy { $0.matches(job) } }.map(\.id)
                var query = JobQuery(limit: 100)
                query.conditions = conditions
                let got = try await h.handle(index).jobs(query).map(\.id)
                #expect(got == expected, "\(name), \(stage)")
            }
        }
        try await check("nothing indexed")
        // The oracle itself, on what the cases above rely on.
        let talk = all.filter { JobCondition(.text, .containsAny(["TALK"])).matches($0) }
        #expect(talk.count == 6, "Talk.MOV and talk_100%.mov, three each")
        #expect(all.filter { JobCondition(.input, .containsAny(["a_k"])).matches($0) }.isEmpty, "LIKE would match talk")
        #expect(all.filter { JobCondition(.worker, .anyOf([workerA.name]), negated: true).matches($0) }.count == 10)
        // Conditions and a cursor together: the second page of queued exports.
        var page = JobQuery(limit: 2)
        page.conditions = [JobCondition(.status, .anyOf(["unknown"])), JobCondition(.kind, .anyOf(["export"]))]
        let first = try await h.store.jobs(page)
        #expect(first.count == 2)
        if let last = first.last {
            page.after = JobQuery.Cursor(createdAt: last.createdAt.milliseconds, id: last.id)
            let second = try await h.handle(1).jobs(page)
            let expected = all.filter { $0.status == .unknown && $0.kind == "export" }.map(\.id)
            #expect((first + second).map(\.id) == Array(expected.prefix(4)))
        }
        // The same answers with part of the jobs indexed (a store with a search index of its
        // own: SQLite), all of them, and a job submitted after the index.
        if let indexing {
            _ = try await indexing.indexSearchText(limit: 5)
            try await check("five indexed")
            while try await indexing.indexSearchText(limit: 4) > 0 {}
            try await check("all indexed")
            var late = Harness.request("cond-late", priority: 0, maxAttempts: 1)
            late.input = "/data/TALK-late.mov"
            _ = try await h.store.submit(late)
            try await check("one submitted since")
        }
    }
}
