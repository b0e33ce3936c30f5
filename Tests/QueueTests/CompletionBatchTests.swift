import Foundation
import MediaTestKit
import Queue
import Synchronization
import Testing

@testable import QueuePostgres

/// `CompletionBatch` without a database: who is sent together, and what a stalled batch holds up.
@Suite("Completion batches")
struct CompletionBatchTests {
    static func completion(_ index: Int) -> CompletionBatch.Completion {
        CompletionBatch.Completion(
            lease: Lease(jobID: JobID("job-\(index)"), token: "t\(index)", attempt: 1, worker: "w"),
            result: "{}",
            tracks: "[]"
        )
    }

    /// Completions arriving while a batch is in the database go together in the next one, and
    /// each caller gets its own outcome.
    @Test func laterCompletionsShareTheNextBatch() async throws {
        let batch = CompletionBatch()
        let sizes = Mutex<[Int]>([])
        let (entered, release) = (AsyncStream<Void>.makeStream(), AsyncStream<Void>.makeStream())
        let commit: @Sendable ([CompletionBatch.Completion]) async -> [Result<Bool, any Error>] = { completions in
            sizes.withLock { $0.append(completions.count) }
            if completions.contains(where: { $0.lease.token == "t0" }) {
                entered.continuation.yield()
                for await _ in release.stream { break }
            }
            return completions.map { .success($0.lease.token != "t3") }
        }
        let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            group.addTask { (0, try await batch.complete(CompletionBatchTests.completion(0), commit: commit)) }
            // The first batch is in "the database" until the other five wait for the next.
            for await _ in entered.stream { break }
            for index in 1..<6 {
                group.addTask {
                    (index, try await batch.complete(CompletionBatchTests.completion(index), commit: commit))
                }
            }
            #expect(await eventually(within: .seconds(10)) { batch.waitingCount == 5 })
            release.continuation.yield()
            return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
        }
        #expect(sizes.withLock { $0 } == [1, 5])
        #expect(outcomes == [0: true, 1: true, 2: true, 3: false, 4: true, 5: true])
    }

}

extension CompletionBatchTests {
    /// The tests of CompletionBatchTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Completion batches: timing", .serialized)
    struct Timing {
        /// A batch that does not come back (a hung connection) holds up only itself: a completion
        /// arriving after `stallAfter` is sent by another flusher.
        @Test func aStalledBatchHoldsUpOnlyItself() async throws {
            let batch = CompletionBatch()
            let release = AsyncStream<Void>.makeStream()
            let entered = AsyncStream<Void>.makeStream()
            let commit: @Sendable ([CompletionBatch.Completion]) async -> [Result<Bool, any Error>] = { completions in
                if completions.contains(where: { $0.lease.token == "t0" }) {
                    entered.continuation.yield()
                    for await _ in release.stream { break }
                }
                return completions.map { _ in .success(true) }
            }
            let stuck = Task { try await batch.complete(CompletionBatchTests.completion(0), commit: commit) }
            // Timed from the moment the batch is in "the database" (a busy test run may start the
            // task late; timed from its creation, the second completion could join the stuck one).
            for await _ in entered.stream { break }
            try await Task.sleep(for: CompletionBatch.stallAfter + .milliseconds(300))
            let started = ContinuousClock.now
            #expect(try await batch.complete(CompletionBatchTests.completion(1), commit: commit))
            #expect(ContinuousClock.now - started < .seconds(1))
            release.continuation.yield()
            #expect(try await stuck.value)
        }
    }
}
