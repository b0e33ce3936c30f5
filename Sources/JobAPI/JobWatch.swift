import Foundation
import Logging
import Queue
import Synchronization

/// Every long poll and event stream of a server watches its job through one `JobWatch`:
///
/// - **One change subscription per server.** On SQLite a subscription is an inotify instance
///   and a thread, and Linux allows 128 instances per user by default; one per request would
///   not scale (and would let clients open threads at will).
/// - **One read per wake-up for every watched job** (`JobQuery.ids`, in chunks), not one per
///   watcher: 10,000 idle long polls cost a query a second, not 10,000.
/// - **A tick every `interval`** besides the notifications, as workers poll: a notification
///   may be missed, PostgreSQL sends none for progress, and a memory store has none at all.
///
/// The loop runs while anybody watches and stops with the last watcher.
final class JobWatch: Sendable {
    /// A job as read at one wake-up, shared by everyone watching it: each watcher's buffer
    /// holds a reference, not its own copy of the job. (It did not shrink a waiting poll: the
    /// ~20 KB heaptrack shows under the body writer is a slab of the task allocator,
    /// docs/benchmarks.md.)
    final class Snapshot: Sendable {
        let job: Job
        init(_ job: Job) { self.job = job }
    }

    /// A watcher's view: the job after each wake-up (`nil`: it is gone), until `finish()`.
    struct Subscription: Sendable {
        let updates: AsyncStream<Snapshot?>
        fileprivate let continuation: AsyncStream<Snapshot?>.Continuation

        /// Ends `updates` (graceful shutdown, a deadline): the watcher's loop returns.
        func finish() { continuation.finish() }
    }

    private struct Watcher {
        let job: JobID
        /// The API key watching (each may hold at most `maximumPerKey` watches).
        let owner: String
        /// When the watch ends by itself (a long poll's wait, a stream's lifetime).
        let deadline: ContinuousClock.Instant
        let continuation: AsyncStream<Snapshot?>.Continuation
    }

    private struct State {
        var watchers: [UUID: Watcher] = [:]
        var perOwner: [String: Int] = [:]
        var loop: Task<Void, Never>?
        var wake: AsyncStream<Void>.Continuation?
    }

    /// Jobs per read.
    static let chunk = 500

    private let store: any JobStore
    private let interval: Duration
    /// Long polls and event streams one API key may hold open on this server at once.
    let maximumPerKey: Int
    private let logger: Logger
    private let state = Mutex(State())

    init(store: any JobStore, interval: Duration = .seconds(1), maximumPerKey: Int = 1000, logger: Logger) {
        self.store = store
        self.interval = interval
        self.maximumPerKey = maximumPerKey
        self.logger = logger
    }

    /// How many watchers there are (tests, metrics).
    var count: Int { state.withLock { $0.watchers.count } }

    /// Starts watching `id` until `deadline` (then `updates` ends, at the first tick after
    /// it: within `interval`). The first update follows at the next wake-up, which subscribing
    /// asks for; each update is the newest (a slow watcher skips to the latest).
    ///
    /// The deadline is kept here rather than in a timer task per watcher: a task, its frames
    /// and a task group per long poll cost tens of kilobytes, and 10,000 idle long polls are the
    /// point of sharing the watch.
    ///
    /// `nil` when `owner` already holds `maximumPerKey` watches: each costs memory and a file
    /// descriptor, and a key must not be able to take them all.
    func watch(_ id: JobID, owner: String, until deadline: ContinuousClock.Instant) -> Subscription? {
        let (updates, continuation) = AsyncStream<Snapshot?>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let token = UUID()
        // Set before the watcher is visible to the loop, which may finish it at once (a
        // deadline already past): the handler must be there to remove it.
        continuation.onTermination = { [weak self] _ in
            let stopped = self?.state.withLock { state -> Task<Void, Never>? in
                if state.watchers.removeValue(forKey: token) != nil {
                    state.perOwner[owner, default: 1] -= 1
                    if state.perOwner[owner] == 0 { state.perOwner[owner] = nil }
                }
                guard state.watchers.isEmpty, let loop = state.loop else { return nil }
                state.loop = nil
                state.wake?.finish()
                state.wake = nil
                return loop
            }
            stopped?.cancel()
        }
        let admitted = state.withLock { state -> (Bool, AsyncStream<Void>.Continuation?) in
            guard state.perOwner[owner, default: 0] < maximumPerKey else { return (false, nil) }
            state.perOwner[owner, default: 0] += 1
            state.watchers[token] = Watcher(job: id, owner: owner, deadline: deadline, continuation: continuation)
            if state.loop == nil {
                let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                state.wake = wake
                state.loop = Task { [weak self] in await self?.run(wakeUps: wakeUps, wake: wake) }
            }
            return (true, state.wake)
        }
        guard admitted.0 else {
            continuation.finish()
            return nil
        }
        let wake = admitted.1
        wake?.yield()
        return Subscription(updates: updates, continuation: continuation)
    }

    private func run(wakeUps: AsyncStream<Void>, wake: AsyncStream<Void>.Continuation) async {
        await withDiscardingTaskGroup { group in
            if let notifying = store as? any JobStoreChangeNotifying {
                group.addTask {
                    for await _ in notifying.changes() { wake.yield() }
                }
            }
            group.addTask { [interval] in
                while (try? await Task.sleep(for: interval)) != nil { wake.yield() }
            }
            for await _ in wakeUps { await readWatchedJobs() }
            group.cancelAll()
        }
    }

    private func readWatchedJobs() async {
        let now = ContinuousClock.now
        let watchers = state.withLock { Array($0.watchers.values) }
        // Past their deadline: ended (each one's termination handler removes it).
        for watcher in watchers where watcher.deadline <= now { watcher.continuation.finish() }
        let watching = watchers.filter { $0.deadline > now }
        guard !watching.isEmpty else { return }
        let ids = Array(Set(watching.map(\.job)))
        var jobs: [JobID: Snapshot] = [:]
        do {
            for start in stride(from: 0, to: ids.count, by: Self.chunk) {
                let chunk = Array(ids[start..<min(start + Self.chunk, ids.count)])
                for job in try await store.jobs(JobQuery(ids: chunk, limit: chunk.count)) {
                    jobs[job.id] = Snapshot(job)
                }
            }
        } catch {
            // The watchers keep what they have; the next wake-up tries again.
            logger.warning("Reading watched jobs failed", metadata: ["error": "\(error)", "jobs": "\(ids.count)"])
            return
        }
        for watcher in watching { watcher.continuation.yield(jobs[watcher.job]) }
    }
}
