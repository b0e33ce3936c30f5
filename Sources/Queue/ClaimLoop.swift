import Synchronization

/// What a claim loop claims and runs: jobs for a worker, webhook deliveries for a dispatcher.
public protocol ClaimLoopDriver: Sendable {
    associatedtype Item: Sendable

    /// Claims up to `limit` items (atomically, under a lease).
    func claim(limit: Int) async throws -> [Item]
    /// Runs one claimed item to its end (concurrently with the others). Its `slot` is freed when
    /// `run` returns, or earlier if the driver frees it: a worker frees it once the job's work
    /// is over and only its report to the store is left, so that the next claim can share that
    /// report's commit.
    func run(_ item: Item, slot: ClaimSlot) async
    /// How bad a failed claim is.
    func classify(_ error: any Error) -> ClaimLoopStateMachine.ClaimFailure
    /// What the loop did: for logs, metrics and the health check.
    func observe(_ event: ClaimLoopEvent)
    /// The drain time is over: ask running items to hand their work back.
    func handBack()
    /// At every wake-up of the loop (a worker renews its own heartbeat here when due).
    func wokeUp() async
    /// The store reported changes of `kinds`, before the loop is woken for them (a worker checks
    /// its running jobs for cancellation at once when one was requested).
    func storeChanged(_ kinds: StoreChange) async
    /// The changes that bring items to claim (a worker: `.jobQueued`; a dispatcher:
    /// `.webhookDue`). The loop wants them only while it has a free slot and its last claim came
    /// back short.
    var claimableChanges: StoreChange { get }
    /// The changes `storeChanged` wants now whether or not the loop would claim (a worker
    /// running jobs: `.cancelRequested`).
    var wantedChanges: StoreChange { get }
}

extension ClaimLoopDriver {
    public func handBack() {}
    public func wokeUp() async {}
    public func storeChanged(_ kinds: StoreChange) async {}
    public var wantedChanges: StoreChange { [] }
}

/// One claimed item's place among a claim loop's `concurrency` slots.
public final class ClaimSlot: Sendable {
    private let freed = Atomic<Bool>(false)
    private let onFree: @Sendable () -> Void

    init(onFree: @escaping @Sendable () -> Void) { self.onFree = onFree }

    /// Gives the slot back to the loop (once; later calls do nothing). The item's task is still
    /// waited for at the end of the loop.
    public func free() {
        guard freed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            return
        }
        onFree()
    }
}

/// A store's change notifications of the kinds wanted at the time (`JobStoreChangeNotifying`).
public typealias StoreChangeSource = @Sendable (_ wanted: @escaping @Sendable () -> StoreChange) -> ChangeFeed

public enum ClaimLoopEvent: Sendable {
    case drainStarted(running: Int)
    case claimed(Int)
    case claimFailed(any Error, ClaimLoopStateMachine.ClaimFailure, retryIn: Duration)
}

/// Runs a `ClaimLoopStateMachine`: wakes on a freed slot, on the poll interval and on the
/// store's change notifications — at most every 2 ms, and only when a slot is free and the last
/// claim came back short (the queue looked empty): a worker that got all it asked for claims
/// again as its slots free, and reacting to every other process's commit only made the
/// processes fight over the write lock (SQLite, 4 processes: 5.0k → 9.7k jobs/s,
/// docs/benchmarks.md) — then claims, runs what it claimed in a task group, and ends when the
/// state machine says so (after the items whose slots were freed early have ended too).
/// Shared by the worker and the webhook dispatcher: the decisions are the state machine's, the
/// waiting is here.
public final class ClaimLoop<Driver: ClaimLoopDriver>: Sendable {
    private let driver: Driver
    private let configuration: ClaimLoopStateMachine.Configuration
    private let pollInterval: Duration
    private let changes: StoreChangeSource?
    private let stopping = Atomic<Bool>(false)
    private let signals = Signals()

    /// - Parameter changes: the store's change notifications (`JobStoreChangeNotifying`), if any.
    public init(
        driver: Driver,
        configuration: ClaimLoopStateMachine.Configuration,
        pollInterval: Duration,
        changes: StoreChangeSource?
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
        // Two groups: an item whose slot was freed early (it is reporting its outcome) is still
        // waited for, and not cancelled with the loop's own tasks when the loop ends.
        await withDiscardingTaskGroup { items in
            await withDiscardingTaskGroup { group in
                group.addTask { [pollInterval] in
                    while !Task.isCancelled {
                        try? await Task.sleep(for: pollInterval)
                        signals.wake()
                    }
                }
                if let changes {
                    group.addTask {
                        let claimable = driver.claimableChanges
                        let wanted: @Sendable () -> StoreChange = {
                            (signals.hasFreeSlots && signals.queueLookedEmpty ? claimable : []).union(
                                driver.wantedChanges
                            )
                        }
                        for await kinds in changes(wanted) {
                            await driver.storeChanged(kinds)
                            if !kinds.isDisjoint(with: claimable) && signals.hasFreeSlots && signals.queueLookedEmpty {
                                signals.wake()
                            }
                            try? await Task.sleep(for: .milliseconds(2))
                        }
                    }
                }
                await loop(adding: &items)
                group.cancelAll()
            }
        }
    }

    /// The state machine's loop: claims, starts each claimed item in `items`, ends when the
    /// machine says so.
    private func loop(adding items: inout DiscardingTaskGroup) async {
        let (driver, signals) = (self.driver, self.signals)
        var machine = ClaimLoopStateMachine(configuration)
        var wakeUps = signals.wakeUps.makeAsyncIterator()
        while true {
            machine.finished(signals.takeFinished())
            machine.ended(signals.takeEnded())
            if stopping.load(ordering: .acquiring), machine.stop(now: .now) {
                driver.observe(.drainStarted(running: machine.running))
            }
            var action = machine.next(now: .now)
            if case .claim(let limit) = action {
                do {
                    let claimed = try await driver.claim(limit: limit)
                    for item in claimed {
                        items.addTask {
                            let slot = ClaimSlot { signals.finished() }
                            await driver.run(item, slot: slot)
                            slot.free()
                            signals.ended()
                        }
                    }
                    action = machine.claimed(claimed.count, now: .now)
                    signals.setQueueLookedEmpty(claimed.count < limit)
                    driver.observe(.claimed(claimed.count))
                } catch {
                    signals.setQueueLookedEmpty(true)
                    let failure = driver.classify(error)
                    action = machine.claimFailed(failure, now: .now)
                    driver.observe(.claimFailed(error, failure, retryIn: machine.backoff))
                }
            }
            switch action {
            case .finish: return
            case .handBack: driver.handBack()
            case .claim, .wait: break
            }
            await driver.wokeUp()
            signals.setFreeSlots(machine.hasFreeSlots)
            guard await wakeUps.next() != nil else { return }
        }
    }

    /// Wake-ups coalesce, and freed slots are counted, so a burst of N completions is one
    /// wake-up and one claim of N slots.
    private final class Signals: Sendable {
        private let finishedCount = Atomic<Int>(0)
        private let endedCount = Atomic<Int>(0)
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

        /// An item's task ended (after its slot was freed).
        func ended() {
            endedCount.add(1, ordering: .relaxed)
            continuation.yield()
        }

        /// Items ended since the last call.
        func takeEnded() -> Int { endedCount.exchange(0, ordering: .relaxed) }

        /// Items finished since the last call.
        func takeFinished() -> Int { finishedCount.exchange(0, ordering: .relaxed) }

        var hasFreeSlots: Bool { freeSlots.load(ordering: .relaxed) }
        func setFreeSlots(_ free: Bool) { freeSlots.store(free, ordering: .relaxed) }

        /// The last claim got fewer items than it asked for (or failed): only then can a
        /// change in the store bring work it would not claim anyway as its slots free.
        var queueLookedEmpty: Bool { lookedEmpty.load(ordering: .relaxed) }
        func setQueueLookedEmpty(_ empty: Bool) { lookedEmpty.store(empty, ordering: .relaxed) }
    }
}
