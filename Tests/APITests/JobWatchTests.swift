import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import MediaTestKit
import Queue
import QueueSQLite
import Synchronization
import Testing

@testable import JobAPI

/// The one-shot watches long polls park on, on a real SQLite file.
@Suite("JobWatch: long polls answered once")
struct JobWatchTests {
    typealias F = APIRouteTests.Fixture

    /// What one watch was told, and when.
    final class Told: Sendable {
        let outcomes = Mutex<[(JobWatch.Outcome, ContinuousClock.Instant)]>([])
        @Sendable func record(_ outcome: JobWatch.Outcome) { outcomes.withLock { $0.append((outcome, .now)) } }
        var count: Int { outcomes.withLock { $0.count } }
        var status: String? {
            outcomes.withLock { told in
                guard case .job(let job) = told.first?.0 else { return nil }
                return job.status.rawValue
            }
        }
    }

}

extension JobWatchTests {
    /// The tests of JobWatchTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("JobWatch: long polls answered once: timing", .serialized)
    struct Timing {
        typealias F = APIRouteTests.Fixture

        @Test(
            "answered once: when the job ends, when the wait is over, at once when the server stops; a cancel is never answered"
        )
        func oneShotWatches() async throws {
            let f = try await F()
            defer { f.directory.remove() }
            let id = try await f.app.test(.router) { client in JobID(try await f.submitJob(client)) }
            let watch = JobWatch(store: f.store, interval: .milliseconds(100), logger: Logger(label: "watch-test"))

            // The wait is over: the job as it is.
            let short = Told()
            let started = ContinuousClock.now
            _ = try #require(watch.watchOnce(id, owner: "k", until: .now + .milliseconds(300), answer: short.record))
            let cancelled = Told()
            let token = try #require(
                watch.watchOnce(id, owner: "k", until: .now + .seconds(30), answer: cancelled.record)
            )
            #expect(await eventually(within: .seconds(5)) { short.count == 1 })
            #expect(short.status == "unknown")
            let waited = try #require(short.outcomes.withLock { $0.first?.1 }) - started
            #expect(waited >= .milliseconds(300) && waited < .seconds(2), "\(waited)")
            watch.cancel(token)
            #expect(watch.count == 0)

            // The job ends: answered at the next wake-up, with the ended job.
            let ending = Told()
            _ = try #require(watch.watchOnce(id, owner: "k", until: .now + .seconds(30), answer: ending.record))
            let claimed = try #require(
                try await f.store.claim(as: APIStreamTests.worker, limit: 1, lease: .seconds(30)).first
            )
            #expect(try await f.store.complete(claimed.lease, result: .null, tracks: []))
            #expect(await eventually(within: .seconds(5)) { ending.count == 1 })
            #expect(ending.status == "completed")

            // The server stops: a long wait is answered at once, and so is one that starts after.
            let (before, after) = (Told(), Told())
            _ = try #require(watch.watchOnce(id, owner: "k", until: .now + .seconds(60), answer: before.record))
            let stopping = ContinuousClock.now
            watch.stopWaiting()
            _ = try #require(watch.watchOnce(id, owner: "k", until: .now + .seconds(60), answer: after.record))
            #expect(await eventually(within: .seconds(5)) { before.count == 1 && after.count == 1 })
            #expect(ContinuousClock.now - stopping < .seconds(2))

            #expect(await holds(for: .milliseconds(400)) { cancelled.count == 0 }, "a cancelled watch was answered")
            let answers: [Int] = [short.count, ending.count, before.count, after.count]
            #expect(answers == [1, 1, 1, 1], "answered more than once")
            #expect(watch.count == 0)
        }
    }
}
