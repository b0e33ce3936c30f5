import Foundation
import MediaTestKit
import Queue
import Synchronization
import Testing

@testable import QueuePostgres

/// `ConnectionWaits` without a database: a wait fails (and its operation is cancelled) once
/// the check says so, never after its connection came; one watcher serves every wait.
@Suite("Connection waits")
struct ConnectionWaitsTests {
    static let refused = JobStoreError(.databaseUnavailable, "the job database cannot be reached: connection refused")

    /// Waits (up to 10 s, for a loaded machine) until `condition` holds.
    static func eventually(_ condition: () -> Bool) async throws {
        try #require(await MediaTestKit.eventually(within: .seconds(10), condition), "timed out")
    }

    /// Past its deadline a wait fails once, with the check's reason, and its operation is
    /// cancelled; a wait that leased is left alone.
    @Test func aWaitPastItsDeadlineFailsAndCancelsItsOperation() async throws {
        let waits = ConnectionWaits { wait in
            ContinuousClock.now - wait.started >= .milliseconds(150) ? Self.refused : nil
        }
        let stuck = waits.begin()
        let cancelled = Mutex(0)
        stuck.attach { cancelled.withLock { $0 += 1 } }
        let leased = waits.begin()
        leased.attach { Issue.record("a wait that leased was cancelled") }
        #expect(leased.leased())
        waits.end(leased)

        try await Self.eventually { stuck.failure != nil }
        #expect(stuck.failure?.message == Self.refused.message)
        #expect(cancelled.withLock { $0 } == 1)
        #expect(leased.failure == nil)
        // Too late to lease: the operation was cancelled and reports the wait's reason.
        #expect(!stuck.leased())
    }

    /// A wait that failed before its operation was attached cancels the operation at once.
    @Test func anOperationAttachedAfterTheFailureIsCancelledAtOnce() {
        let waits = ConnectionWaits { _ in nil }
        let wait = waits.begin()
        wait.fail(Self.refused)
        wait.fail(JobStoreError(.databaseUnavailable, "a second reason"))
        let cancelled = Mutex(false)
        wait.attach { cancelled.withLock { $0 = true } }
        #expect(cancelled.withLock { $0 })
        #expect(wait.failure?.message == Self.refused.message)
        waits.end(wait)
    }

}

/// The shortcuts on a busy worker's path give what the general code gives.
@Suite("Stored values: shortcuts")
struct StoredShortcutTests {
    /// The empty values' JSON without an encoder is the encoder's; other values go to it.
    @Test func jsonShortcutsMatchTheEncoder() throws {
        struct Generic<Value: Encodable>: Encodable {
            let value: Value
            func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        }
        func generic(_ value: some Encodable) throws -> String { try StoredJSON.encode(Generic(value: value)) }
        for value: JSONValue in [.null, .object([:]), .array([]), .object(["a/b": .number(1), "c": .null])] {
            #expect(try StoredJSON.encode(value) == generic(value))
        }
        let track = JobTrack(
            index: 0,
            sourceIndex: 1,
            mediaType: "video",
            status: .reading,
            codec: "h264",
            read: 3,
            written: 2
        )
        for tracks in [[], [track]] { #expect(try StoredJSON.encode(tracks) == generic(tracks)) }
        for metadata in [[:], ["user": "x/y", "a": "b"]] {
            #expect(try StoredJSON.encode(metadata) == generic(metadata))
        }
    }

    /// Sorting positions gives the order sorting the jobs gives.
    @Test func claimOrderOfPositionsIsTheClaimOrder() {
        var generator = SystemRandomNumberGenerator()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let jobs = (0..<200).map { index -> ClaimedJob in
            let id = JobID.make(at: start.addingTimeInterval(Double(index)))
            let job = Job(
                id: id,
                kind: .noop,
                status: .reading,
                input: "noop",
                output: "",
                preset: "noop",
                presetSettings: .null,
                format: nil,
                range: nil,
                priority: Int.random(in: -2...2, using: &generator),
                attempt: 1,
                maxAttempts: 3,
                progress: 0,
                tracks: [],
                result: nil,
                error: nil,
                webhook: nil,
                metadata: [:],
                idempotencyKey: nil,
                worker: "w",
                cancelRequested: false,
                runAt: start,
                createdAt: start.addingTimeInterval(Double(Int.random(in: 0..<20, using: &generator))),
                startedAt: start,
                finishedAt: nil
            )
            return ClaimedJob(job: job, lease: Lease(jobID: id, token: "t", attempt: 1, worker: "w"))
        }
        #expect(ClaimedJob.inClaimOrder(jobs).map(\.job.id) == jobs.sorted(by: ClaimedJob.claimOrder).map(\.job.id))
        #expect(ClaimedJob.inClaimOrder([]).isEmpty)
    }
}

extension ConnectionWaitsTests {
    /// The tests of ConnectionWaitsTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Connection waits: timing", .serialized)
    struct Timing {
        /// Many waits at once are checked by one watcher, which stops when none is left and
        /// starts again for the next.
        @Test func oneWatcherServesManyWaitsAndStopsWhenNoneIsLeft() async throws {
            let checks = Mutex(0)
            let waits = ConnectionWaits { _ in
                checks.withLock { $0 += 1 }
                return nil
            }
            let started = ContinuousClock.now
            let many = (0..<100).map { _ in waits.begin() }
            try await ConnectionWaitsTests.eventually { checks.withLock { $0 } >= 100 }
            // Rounds of 100 checks every 100 ms, not a sleeping task per wait.
            let rounds = (ContinuousClock.now - started) / .milliseconds(100) + 2
            let checked = checks.withLock { $0 }
            #expect(Double(checked) <= rounds * 100, "\(checked) checks in \(ContinuousClock.now - started)")
            for wait in many { waits.end(wait) }
            try await ConnectionWaitsTests.eventually { !waits.isWatching }
            let after = checks.withLock { $0 }

            let late = waits.begin()
            try await ConnectionWaitsTests.eventually { checks.withLock { $0 } > after }
            waits.end(late)
        }
    }
}
