import Foundation
import Queue
import Testing

// Conformance checks: claiming.
extension Checks {
    static func claimOrder(_ h: Harness) async throws {
        let long = Duration.seconds(3600)
        // The oldest job with the highest priority, but waiting 60 s for its retry: skipped.
        let waiting = try await h.submit("waiting", priority: 100)
        let first = try await h.claim(waiting.id, lease: long)
        #expect(try await h.store.fail(first.lease, error: retryableError, retryDelay: .seconds(60)))
        h.clock.advance(by: .milliseconds(1))

        let specs: [(String, Int)] = [
            ("p0-a", 0), ("p5-a", 5), ("p0-b", 0), ("pm1", -1), ("p5-b", 5), ("p10", 10), ("p0-c", 0),
        ]
        for (index, (name, priority)) in specs.enumerated() {
            try await h.submit(name, priority: priority, on: index)
            h.clock.advance(by: .milliseconds(1))
        }
        func inputs(_ claimed: [ClaimedJob]) -> [String] {
            claimed.map { String($0.job.input.dropFirst(6).dropLast(4)) }
        }

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
        func inputs(_ claimed: [ClaimedJob]) -> [String] {
            claimed.map { String($0.job.input.dropFirst(6).dropLast(4)) }
        }
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
        #expect(
            Set(claimed.map(\.lease.token)).count == 3,
            "every lease has its own token: \(claimed.map(\.lease.token))"
        )
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
                let worker = WorkerIdentity(
                    name: "worker-\(task)",
                    host: "host-\(task % 4)",
                    pid: Int32(1000 + task),
                    version: "conformance"
                )
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
        #expect(
            Set(ids) == Set(submitted),
            "missing: \(Set(submitted).subtracting(ids).count), extra: \(Set(ids).subtracting(submitted).count)"
        )
        #expect(Set(claimed.map(\.lease.token)).count == claimed.count, "every claim has its own token")
        #expect(claimed.allSatisfy { $0.job.attempt == 1 && $0.lease.attempt == 1 }, "every job on attempt 1")
        var wrongWorker: [String] = []
        for (worker, jobs) in perTask {
            for item in jobs {
                let recorded = try await h.fetch(item.job.id).worker
                if item.job.worker != worker || recorded != worker {
                    wrongWorker.append(
                        "\(item.job.input): claimed by \(worker), claim says \(item.job.worker ?? "nil"), job says \(recorded ?? "nil")"
                    )
                }
            }
        }
        #expect(
            wrongWorker.count == 0,
            "the job records the worker that claimed it: \(wrongWorker.count) do not, e.g. \(wrongWorker.prefix(3))"
        )
        let running = try await h.store.jobs(status: .reading, limit: 1000)
        #expect(running.count == 60)
        try await h.expectNothingClaimed("all 60 jobs are running")
    }
}
