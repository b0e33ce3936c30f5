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
