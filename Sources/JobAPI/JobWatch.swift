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
package final class JobWatch: Sendable {
    /// A job as read at one wake-up, shared by everyone watching it: each stream's buffer holds
    /// a reference, not its own copy of the job.
    package final class Snapshot: Sendable {
        package let job: Job
        init(_ job: Job) { self.job = job }
    }

    /// A watcher's view: the job after each wake-up (`nil`: it is gone), until `finish()`.
    struct Subscription: Sendable {
        let updates: AsyncStream<Snapshot?>
        fileprivate let continuation: AsyncStream<Snapshot?>.Continuation

        /// Ends `updates` (graceful shutdown, a deadline): the watcher's loop returns.
        func finish() { continuation.finish() }
    }

    /// A dashboard page's view after a wake-up: its jobs as read (one missing is gone), and
    /// whether the store notified a change since the last wake-up (a job may have been
    /// submitted: the jobs page looks for new ones).
    package struct PageUpdate: Sendable {
        package let jobs: [JobID: Snapshot]
        package let notified: Bool
        /// The wake-up's instant, the same for every page it reached: reads that each page would
        /// make after it are shared by it (`NewestJobReads`).
        package let wokeAt: ContinuousClock.Instant
    }

    /// A dashboard page's watch of the jobs it shows, until `finish()`.
    package struct PageSubscription: Sendable {
        package let updates: AsyncStream<PageUpdate>
        fileprivate let continuation: AsyncStream<PageUpdate>.Continuation

        package func finish() { continuation.finish() }
    }

    /// How a long poll's watch ends: answered once, then forgotten.
    enum Outcome: Sendable {
        /// The job has ended, or the wait is over (the job as it is then).
        case job(Job)
        /// The job is no longer there.
        case gone
        /// The wait is over and the job could not be read.
        case unavailable
    }

    /// Who is told: an event stream gets every update, a long poll one answer.
    private enum Sink {
        case stream(AsyncStream<Snapshot?>.Continuation)
        case answer(@Sendable (Outcome) -> Void)
        /// A dashboard page: an update at every wake-up.
        case page(AsyncStream<PageUpdate>.Continuation)
    }

    private struct Watcher {
        /// One job for a stream or a long poll; a page's jobs (possibly none) for a page.
        let jobs: [JobID]
        /// The API key watching (each may hold at most `maximumPerKey` watches).
        let owner: String
        /// What it takes of its owner's share: a job read at every wake-up is one, so a page
        /// watching 50 jobs takes 50 (and one watching none, 1).
        var weight: Int { max(1, jobs.count) }
        /// When the watch ends by itself (a long poll's wait, a stream's lifetime).
        var deadline: ContinuousClock.Instant
        let sink: Sink
    }

    private struct State {
        var watchers: [UUID: Watcher] = [:]
        var perOwner: [String: Int] = [:]
        var loop: Task<Void, Never>?
        var wake: AsyncStream<Void>.Continuation?
        /// The server is stopping: long polls are answered at the next wake-up.
        var stopping = false
        /// The store notified a change since the last read.
        var notified = false
        var wakeUps = 0
    }

    /// Jobs per read.
    package static let chunk = 500

    private let store: any JobStoreChangeNotifying
    private let interval: Duration
    /// Long polls and event streams one API key may hold open on this server at once.
    let maximumPerKey: Int
    private let logger: Logger
    private let state = Mutex(State())

    init(
        store: any JobStoreChangeNotifying,
        interval: Duration = .seconds(1),
        maximumPerKey: Int = 1000,
        logger: Logger
    ) {
        self.store = store
        self.interval = interval
        self.maximumPerKey = maximumPerKey
        self.logger = logger
    }

    /// How many watchers there are (tests, metrics).
    package var count: Int { state.withLock { $0.watchers.count } }

    /// How many wake-ups the watch has finished (tests: a change made before a wake-up that
    /// began after it has reached every watcher once two more have finished).
    package var wakeUps: Int { state.withLock { $0.wakeUps } }

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
        continuation.onTermination = { [weak self] _ in self?.remove(token) }
        guard admit(token, Watcher(jobs: [id], owner: owner, deadline: deadline, sink: .stream(continuation))) else {
            continuation.finish()
            return nil
        }
        return Subscription(updates: updates, continuation: continuation)
    }

    /// Watches `id` for a long poll: `answer` is called once, from the watch's loop, when the
    /// job has ended, is gone, or `deadline` has passed (then with the job as read at that
    /// tick: within `interval` of it). Nothing else is kept per poll: no task, no stream.
    ///
    /// The token ends the watch early: `cancel` without an answer (the client left), `expire`
    /// with one at the next wake-up (the server is stopping). `nil` past the key's share.
    func watchOnce(
        _ id: JobID,
        owner: String,
        until deadline: ContinuousClock.Instant,
        answer: @escaping @Sendable (Outcome) -> Void
    ) -> UUID? {
        let token = UUID()
        guard admit(token, Watcher(jobs: [id], owner: owner, deadline: deadline, sink: .answer(answer))) else {
            return nil
        }
        return token
    }

    /// Watches a dashboard page's `ids` (at most `pageLimit`) until `deadline`, and the store's
    /// notifications: an update follows every wake-up.
    /// Only the newest updates are kept for a slow watcher. It takes one of `owner`'s share per
    /// job (at least one); `nil` past it.
    package func watchPage(_ ids: [JobID], owner: String, until deadline: ContinuousClock.Instant) -> PageSubscription?
    {
        let (updates, continuation) = AsyncStream<PageUpdate>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let token = UUID()
        continuation.onTermination = { [weak self] _ in self?.remove(token) }
        let watcher = Watcher(
            jobs: Array(ids.prefix(Self.pageLimit)),
            owner: owner,
            deadline: deadline,
            sink: .page(continuation)
        )
        guard admit(token, watcher) else {
            continuation.finish()
            return nil
        }
        return PageSubscription(updates: updates, continuation: continuation)
    }

    /// The most jobs one page watches.
    package static let pageLimit = 100

    /// Forgets a watch without answering it.
    func cancel(_ token: UUID) { remove(token) }

    /// Answers a long poll at the next wake-up, which this asks for, as if its wait were over.
    func expire(_ token: UUID) {
        let wake = state.withLock { state -> AsyncStream<Void>.Continuation? in
            state.watchers[token]?.deadline = .now
            return state.wake
        }
        wake?.yield()
    }

    /// The server is stopping: every long poll is answered at the next wake-up (which this
    /// asks for), with the job as it is, and so is any that starts from now on.
    package func stopWaiting() {
        let wake = state.withLock { state -> AsyncStream<Void>.Continuation? in
            state.stopping = true
            for (token, watcher) in state.watchers {
                if case .answer = watcher.sink { state.watchers[token]?.deadline = .now }
            }
            return state.wake
        }
        wake?.yield()
    }

    /// Admits a watcher within its owner's share, starts the loop if it is the first, and asks
    /// for a wake-up (its first read).
    private func admit(_ token: UUID, _ watcher: Watcher) -> Bool {
        let wake = state.withLock { state -> AsyncStream<Void>.Continuation?? in
            guard state.perOwner[watcher.owner, default: 0] + watcher.weight <= maximumPerKey else { return .none }
            state.perOwner[watcher.owner, default: 0] += watcher.weight
            var watcher = watcher
            if state.stopping, case .answer = watcher.sink { watcher.deadline = .now }
            state.watchers[token] = watcher
            if state.loop == nil {
                let (wakeUps, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
                state.wake = wake
                state.loop = Task { [weak self] in await self?.run(wakeUps: wakeUps, wake: wake) }
            }
            return .some(state.wake)
        }
        guard let wake else { return false }
        wake?.yield()
        return true
    }

    /// Removes a watcher; `false` if it was gone already. The loop stops with the last.
    @discardableResult
    private func remove(_ token: UUID) -> Bool {
        let (removed, stopped) = state.withLock { state -> (Bool, Task<Void, Never>?) in
            guard let watcher = state.watchers.removeValue(forKey: token) else { return (false, nil) }
            state.perOwner[watcher.owner, default: watcher.weight] -= watcher.weight
            if state.perOwner[watcher.owner] == 0 { state.perOwner[watcher.owner] = nil }
            guard state.watchers.isEmpty, let loop = state.loop else { return (true, nil) }
            state.loop = nil
            state.wake?.finish()
            state.wake = nil
            return (true, loop)
        }
        stopped?.cancel()
        return removed
    }

    private func run(wakeUps: AsyncStream<Void>, wake: AsyncStream<Void>.Continuation) async {
        await withDiscardingTaskGroup { group in
            group.addTask { [store] in
                for await _ in store.changes() {
                    self.state.withLock { $0.notified = true }
                    wake.yield()
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
        defer { state.withLock { $0.wakeUps += 1 } }
        let now = ContinuousClock.now
        let (watchers, notified) = state.withLock { state in
            defer { state.notified = false }
            return (Array(state.watchers), state.notified)
        }
        // Streams and pages past their deadline end (each one's termination handler removes
        // it); long polls past theirs are answered below, with the job as read now.
        for (_, watcher) in watchers where watcher.deadline <= now {
            switch watcher.sink {
            case .stream(let continuation): continuation.finish()
            case .page(let continuation): continuation.finish()
            case .answer: break
            }
        }
        let watching = watchers.filter { _, watcher in
            if case .answer = watcher.sink { return true }
            return watcher.deadline > now
        }
        guard !watching.isEmpty else { return }
        let ids = Array(Set(watching.flatMap(\.value.jobs)))
        var jobs: [JobID: Snapshot] = [:]
        do {
            for start in stride(from: 0, to: ids.count, by: Self.chunk) {
                let chunk = Array(ids[start..<min(start + Self.chunk, ids.count)])
                for job in try await store.jobs(JobQuery(ids: chunk, limit: chunk.count)) {
                    jobs[job.id] = Snapshot(job)
                }
            }
        } catch {
            // The watchers keep what they have and the next wake-up tries again; a long poll
            // whose wait is over is told the database failed.
            if !Task.isCancelled {
                logger.warning("Reading watched jobs failed", metadata: ["error": "\(error)", "jobs": "\(ids.count)"])
            }
            for (token, watcher) in watching where watcher.deadline <= now {
                if case .answer(let answer) = watcher.sink, take(token) { answer(.unavailable) }
            }
            // The notification is still news at the next wake-up.
            if notified { state.withLock { $0.notified = true } }
            return
        }
        for (token, watcher) in watching {
            if case .page(let continuation) = watcher.sink {
                // Every wake-up, even with nothing to read: the page's stream sends its
                // keep-alives between them.
                let seen = watcher.jobs.compactMap { id in jobs[id].map { (id, $0) } }
                continuation.yield(
                    PageUpdate(
                        jobs: Dictionary(seen, uniquingKeysWith: { first, _ in first }),
                        notified: notified,
                        wokeAt: now
                    )
                )
                continue
            }
            let snapshot = jobs[watcher.jobs[0]]
            switch watcher.sink {
            case .stream(let continuation):
                continuation.yield(snapshot)
            case .answer(let answer):
                guard let job = snapshot?.job else {
                    if take(token) { answer(.gone) }
                    continue
                }
                if job.status.isTerminal || watcher.deadline <= now, take(token) { answer(.job(job)) }
            case .page: break
            }
        }
    }

    /// Removes a long poll's watcher if it is still there: whoever takes it answers it, once
    /// (a cancel may race the answer).
    private func take(_ token: UUID) -> Bool { remove(token) }
}
