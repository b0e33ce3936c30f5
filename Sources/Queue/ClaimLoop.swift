import Synchronization

/// What a claim loop claims and runs: jobs for a worker, webhook deliveries for a dispatcher.
public protocol ClaimLoopDriver: Sendable {
    associatedtype Item: Sendable

    /// Claims up to `limit` items (atomically, under a lease).
    func claim(limit: Int) async throws -> [Item]
    /// Runs one claimed item to its end (concurrently with the others).
    func run(_ item: Item) async
    /// How bad a failed claim is.
    func classify(_ error: any Error) -> ClaimLoopStateMachine.ClaimFailure
    /// What the loop did: for logs, metrics and the health check.
    func observe(_ event: ClaimLoopEvent)
    /// The drain time is over: ask running items to hand their work back.
    func handBack()
    /// At every wake-up of the loop (a worker renews its own heartbeat here when due).
    func wokeUp() async
    /// The store reported a change, before the loop is woken for it (a worker checks its running
    /// jobs for cancellation at once).
    func storeChanged() async
    /// Whether `storeChanged()` has anything to do now (a worker: it runs jobs that may be
    /// cancelled), so changes must be listened to although the loop would not claim for them.
    var wantsStoreChanges: Bool { get }
}

extension ClaimLoopDriver {
    public func handBack() {}
    public func wokeUp() async {}
    public func storeChanged() async {}
    public var wantsStoreChanges: Bool { false }
}

/// A store's change notifications, given when they are wanted (`listening`): a store may stop
/// watching meanwhile (SQLite's inotify watcher stops reading events; they coalesce).
public typealias StoreChanges = @Sendable (_ listening: @escaping @Sendable () -> Bool) -> AsyncStream<Void>

public enum ClaimLoopEvent: Sendable {
    case drainStarted(running: Int)
    case claimed(Int)
    case claimFailed(any Error, ClaimLoopStateMachine.ClaimFailure, retryIn: Duration)
}

/// Runs a `ClaimLoopStateMachine`: wakes on a finished item, on the poll interval and on the
/// store's change notifications — at most every 2 ms, and only when a slot is free and the last
/// claim came back short (the queue looked empty): a worker that got all it asked for claims
/// again as its items finish, and reacting to every other process's commit only made the
/// processes fight over the write lock (SQLite, 4 processes: 5.0k → 9.7k jobs/s,
/// docs/benchmarks.md) — then claims, runs what it claimed in a task group, and ends when the
/// state machine says so. Shared by the worker and the webhook
/// dispatcher: the decisions are the state machine's, the waiting is here.
public final class ClaimLoop<Driver: ClaimLoopDriver>: Sendable {
    private let driver: Driver
    private let configuration: ClaimLoopStateMachine.Configuration
    private let pollInterval: Duration
    private let changes: StoreChanges?
    private let stopping = Atomic<Bool>(false)
    private let signals = Signals()

    /// - Parameter changes: the store's change notifications (`JobStoreChangeNotifying`), if any.
    public init(
        driver: Driver,
        configuration: ClaimLoopStateMachine.Configuration,
        pollInterval: Duration,
        changes: StoreChanges?
    ) {
        self.driver = driver
        self.configuration = configuration
        self.pollInterval = pollInterval
        self.changes = changes
    }

    /// Begins the drain (graceful shutdown).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        signals.wake()
    }

    public var isStopping: Bool { stopping.load(ordering: .acquiring) }

    public func run() async {
        let (driver, signals) = (self.driver, self.signals)
        await withDiscardingTaskGroup { group in
            group.addTask { [pollInterval] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: pollInterval)
                    signals.wake()
                }
            }
            if let changes {
                group.addTask {
                    let listening: @Sendable () -> Bool = {
                        signals.hasFreeSlots && signals.queueLookedEmpty || driver.wantsStoreChanges
                    }
                    for await _ in changes(listening) {
                        await driver.storeChanged()
                        if signals.hasFreeSlots && signals.queueLookedEmpty { signals.wake() }
                        try? await Task.sleep(for: .milliseconds(2))
                    }
                }
            }
            var machine = ClaimLoopStateMachine(configuration)
            var wakeUps = signals.wakeUps.makeAsyncIterator()
            loop: while true {
                machine.finished(signals.takeFinished())
                if stopping.load(ordering: .acquiring), machine.stop(now: .now) {
                    driver.observe(.drainStarted(running: machine.running))
                }
                var action = machine.next(now: .now)
                if case .claim(let limit) = action {
                    do {
                        let items = try await driver.claim(limit: limit)
                        for item in items {
                            group.addTask {
                                await driver.run(item)
                                signals.finished()
                            }
                        }
                        action = machine.claimed(items.count, now: .now)
                        signals.setQueueLookedEmpty(items.count < limit)
                        driver.observe(.claimed(items.count))
                    } catch {
                        signals.setQueueLookedEmpty(true)
                        let failure = driver.classify(error)
                        action = machine.claimFailed(failure, now: .now)
                        driver.observe(.claimFailed(error, failure, retryIn: machine.backoff))
                    }
                }
                switch action {
                case .finish: break loop
                case .handBack: driver.handBack()
                case .claim, .wait: break
                }
                await driver.wokeUp()
                signals.setFreeSlots(machine.hasFreeSlots)
                guard await wakeUps.next() != nil else { break }
            }
            group.cancelAll()
        }
    }

    /// Wake-ups coalesce, and finished items are counted, so a burst of N completions is one
    /// wake-up and one claim of N slots.
    private final class Signals: Sendable {
        private let finishedCount = Atomic<Int>(0)
        private let freeSlots = Atomic<Bool>(true)
        private let lookedEmpty = Atomic<Bool>(true)
        let wakeUps: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation

        init() {
            (wakeUps, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        }

        func finished() {
            finishedCount.add(1, ordering: .relaxed)
            continuation.yield()
        }

        func wake() { continuation.yield() }

        /// Items finished since the last call.
        func takeFinished() -> Int { finishedCount.exchange(0, ordering: .relaxed) }

        var hasFreeSlots: Bool { freeSlots.load(ordering: .relaxed) }
        func setFreeSlots(_ free: Bool) { freeSlots.store(free, ordering: .relaxed) }

        /// The last claim got fewer items than it asked for (or failed): only then can a
        /// change in the store bring work it would not claim anyway as its items finish.
        var queueLookedEmpty: Bool { lookedEmpty.load(ordering: .relaxed) }
        func setQueueLookedEmpty(_ empty: Bool) { lookedEmpty.store(empty, ordering: .relaxed) }
    }
}
