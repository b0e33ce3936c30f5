import Queue
import Synchronization

/// Operations waiting for a connection from the pool, and the one task that fails those that
/// wait too long. The pool retries failed connections forever; without a deadline an operation
/// on an unreachable database would hang instead of saying why.
///
/// One watcher for all of a store's waits, waking every 100 ms only while some operation is
/// waiting: before, every statement raced its own sleeping task against its lease, and the
/// timers that cost (a task group, two tasks, a dispatch timer armed and cancelled per
/// statement) were a tenth of a busy worker's CPU (docs/benchmarks.md).
final class ConnectionWaits: Sendable {
    /// One operation's wait: ends when it leases a connection, or fails once.
    final class Wait: Sendable {
        let started = ContinuousClock.now
        private struct State {
            var leased = false
            var failure: JobStoreError?
            var cancel: (@Sendable () -> Void)?
        }
        private let state = Mutex(State())

        /// Why the wait failed, if it did.
        var failure: JobStoreError? { state.withLock { $0.failure } }

        /// The connection came: the wait can no longer fail. Returns false if it already had.
        @discardableResult
        func leased() -> Bool {
            state.withLock { state in
                guard state.failure == nil else { return false }
                state.leased = true
                return true
            }
        }

        /// Fails the wait (once, and only before a lease): cancels the operation.
        func fail(_ error: JobStoreError) {
            let cancel = state.withLock { state -> (@Sendable () -> Void)? in
                guard !state.leased, state.failure == nil else { return nil }
                state.failure = error
                return state.cancel
            }
            cancel?()
        }

        /// How to cancel the operation; called at once if the wait failed before.
        func attach(cancel: @escaping @Sendable () -> Void) {
            let failed = state.withLock { state -> Bool in
                state.cancel = cancel
                return state.failure != nil
            }
            if failed { cancel() }
        }
    }

    private struct State {
        var waiting: [ObjectIdentifier: Wait] = [:]
        var watching = false
    }
    private let state = Mutex(State())
    private let check: @Sendable (Wait) -> JobStoreError?

    /// - Parameter check: whether a wait has failed: its reason, or `nil` to keep waiting.
    init(check: @escaping @Sendable (Wait) -> JobStoreError?) { self.check = check }

    /// Whether the watcher runs (tests: it stops once no wait is left).
    var isWatching: Bool { state.withLock { $0.watching } }

    /// Starts watching a new wait.
    func begin() -> Wait {
        let wait = Wait()
        let startWatcher = state.withLock { state -> Bool in
            state.waiting[ObjectIdentifier(wait)] = wait
            defer { state.watching = true }
            return !state.watching
        }
        if startWatcher { Task { await self.watch() } }
        return wait
    }

    /// Stops watching `wait` (leased, or the operation ended).
    func end(_ wait: Wait) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(wait)) }
    }

    /// Checks the waits every 100 ms while there are any.
    private func watch() async {
        while true {
            try? await Task.sleep(for: .milliseconds(100))
            let waits = state.withLock { state -> [Wait] in
                if state.waiting.isEmpty { state.watching = false }
                return Array(state.waiting.values)
            }
            if waits.isEmpty { return }
            for wait in waits {
                guard let error = check(wait) else { continue }
                end(wait)
                wait.fail(error)
            }
        }
    }
}
