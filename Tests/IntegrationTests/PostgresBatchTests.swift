import Foundation
import MediaTestKit
import Queue
import QueuePostgres
import Synchronization
import Testing

/// Completions that arrive together share one statement (`CompletionBatch`): each caller must
/// still get its own answer, as if it had been alone.
@Suite("PostgreSQL completions in batches")
struct PostgresBatchTests {
    /// 40 jobs completed at once: 4 with a stale lease token (refused), one with a webhook (its
    /// event is written), one whose tracks the server rejects (JSON with a NUL character, which
    /// `jsonb` refuses): that one fails alone, the others are accepted with their results and
    /// tracks.
    @Test func concurrentCompletionsEachGetTheirOwnAnswer() async throws {
        let url = try await TestPostgres.shared.freshDatabase("batch")
        try await PostgresJobStore.withStore(url: url) { store in
            for index in 0..<40 {
                _ = try await store.submit(
                    JobRequest(
                        kind: .noop,
                        input: "noop-\(index)",
                        output: "",
                        preset: "noop",
                        webhook: index == 0 ? "https://example.com/hook" : nil
                    )
                )
            }
            let worker = WorkerIdentity(name: "batch", host: "test", pid: 1, version: "test")
            let claimed = try await store.claim(as: worker, limit: 40, lease: .seconds(60))
            try #require(claimed.count == 40)
            #expect(claimed.filter(\.lease.hasWebhook).map(\.job.input) == ["noop-0"])

            let stale: Set<Int> = [3, 13, 23, 33]
            let rejected = 7
            let outcomes = await withTaskGroup(of: (Int, Result<Bool, any Error>).self) { group in
                for (index, job) in claimed.enumerated() {
                    var lease = job.lease
                    if stale.contains(index) { lease.token = "stale" }
                    let track = JobTrack(
                        index: 0,
                        sourceIndex: 0,
                        mediaType: "video",
                        status: .completed,
                        codec: index == rejected ? "h264\u{0}" : "h264",
                        read: Int64(index),
                        written: Int64(index)
                    )
                    group.addTask {
                        do {
                            let accepted = try await store.complete(
                                lease,
                                result: .object(["n": .number(Double(index))]),
                                tracks: [track]
                            )
                            return (index, .success(accepted))
                        } catch {
                            return (index, .failure(error))
                        }
                    }
                }
                var outcomes: [Int: Result<Bool, any Error>] = [:]
                for await (index, outcome) in group { outcomes[index] = outcome }
                return outcomes
            }

            for (index, job) in claimed.enumerated() {
                let stored = try #require(try await store.job(job.job.id))
                switch outcomes[index] {
                case .success(true)?:
                    #expect(!stale.contains(index) && index != rejected, "\(index) accepted")
                    #expect(stored.status == .completed)
                    #expect(stored.result == .object(["n": .number(Double(index))]))
                    #expect(stored.tracks.map(\.written) == [Int64(index)])
                case .success(false)?:
                    #expect(stale.contains(index), "\(index) refused")
                    #expect(stored.status == .reading)
                case .failure?:
                    #expect(index == rejected, "\(index) failed")
                    #expect(stored.status == .reading)
                case nil:
                    Issue.record("no outcome for \(index)")
                }
            }
            let hooked = try #require(claimed.first { $0.lease.hasWebhook })
            let events = try await store.deliveries(job: hooked.job.id, limit: 10)
            #expect(events.map(\.type) == ["job.completed"])
        }
    }

    /// A worker running jobs wants cancellations only: submits (NOTIFY 'job') must not reach
    /// it (each would be a cancellation query), a cancel must; an idle one hears both.
    @Test func notificationsReachOnlyTheSubscribersThatWantTheirKind() async throws {
        let url = try await TestPostgres.shared.freshDatabase("notify_kinds")
        try await PostgresJobStore.withStore(url: url) { store in
            let busy = Mutex<[StoreChange]>([])
            let idle = Mutex<[StoreChange]>([])
            let busyFeed = store.changes(wanted: { .cancelRequested })
            let idleFeed = store.changes(wanted: { [.jobQueued, .cancelRequested] })
            let listeners = [
                Task { for await kinds in busyFeed { busy.withLock { $0.append(kinds) } } },
                Task { for await kinds in idleFeed { idle.withLock { $0.append(kinds) } } },
            ]
            defer { for listener in listeners { listener.cancel() } }
            // The connection's first `.any`, then nothing else before the submits.
            try #require(
                await eventually(within: .seconds(10)) { !busy.withLock(\.isEmpty) && !idle.withLock(\.isEmpty) },
                "a subscriber never got its connection's first change"
            )
            busy.withLock { $0 = [] }
            idle.withLock { $0 = [] }

            var submitted: [JobID] = []
            for index in 0..<5 {
                submitted.append(
                    try await store.submit(
                        JobRequest(kind: .noop, input: "n\(index)", output: "", preset: "noop")
                    ).job.id
                )
            }
            let heard = await eventually(within: .seconds(10)) {
                idle.withLock { $0.contains { $0.contains(.jobQueued) } }
            }
            #expect(heard, "the idle subscriber missed the submits")
            let quiet = await holds(for: .milliseconds(200)) { busy.withLock { $0 } == [] }
            #expect(quiet, "submits reached a subscriber that wants cancellations only")

            let worker = WorkerIdentity(name: "kinds", host: "test", pid: 1, version: "test")
            let claimed = try await store.claim(as: worker, limit: 1, lease: .seconds(60))
            let running = try #require(claimed.first).job.id
            _ = try await store.cancel(running)
            _ = await eventually(within: .seconds(10)) { !busy.withLock { $0.isEmpty } }
            #expect(busy.withLock { $0 } == [.cancelRequested])
        }
    }
}
