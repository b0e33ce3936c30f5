import Foundation
import Queue
import Synchronization

/// One subscription to the store's change notifications per server, shared by every long
/// poll: on SQLite each subscription is an inotify instance and a thread, and Linux allows 128
/// instances per user by default, so one per request would not scale (and would let a client
/// open threads at will). The subscription starts with the first waiter and ends with the last.
final class ChangeFanOut: Sendable {
    private struct State {
        var waiters: [UUID: AsyncStream<Void>.Continuation] = [:]
        var listener: Task<Void, Never>?
    }

    private let store: (any JobStoreChangeNotifying)?
    private let state = Mutex(State())

    init(store: any JobStore) { self.store = store as? any JobStoreChangeNotifying }

    /// Yields after each change; `nil` when the store has no notifications (waiters poll).
    func subscribe() -> AsyncStream<Void>? {
        guard let store else { return nil }
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        state.withLock { state in
            state.waiters[id] = continuation
            if state.listener == nil {
                state.listener = Task { [weak self] in
                    for await _ in store.changes() {
                        guard let self else { return }
                        for waiter in self.state.withLock({ Array($0.waiters.values) }) { waiter.yield() }
                    }
                }
            }
        }
        continuation.onTermination = { [weak self] _ in
            let listener = self?.state.withLock { state -> Task<Void, Never>? in
                state.waiters[id] = nil
                guard state.waiters.isEmpty else { return nil }
                defer { state.listener = nil }
                return state.listener
            }
            listener?.cancel()
        }
        return stream
    }
}
