import Foundation
import Logging
import PostgresNIO
import Queue

// LISTEN/NOTIFY: `changes()` and the listening connection.
extension PostgresJobStore {
    // MARK: Notifications

    /// Yields on every `pg_notify('jobctl', …)` (a submit, a cancel, a retry, an event), and once
    /// on each (re)connection, since notifications sent while disconnected are lost. One
    /// listening connection per store, however many subscribers (the worker's claim loop and its
    /// webhook dispatcher share it); it closes with the last subscriber. A lost connection is
    /// reopened with backoff; workers keep polling meanwhile.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        listening.withLock { state in
            state.subscribers[id] = continuation
            if state.listener == nil {
                state.listener = Task { [self] in await listen() }
            } else if state.connected {
                continuation.yield()
            }
        }
        continuation.onTermination = { [weak self] _ in
            let listener = self?.listening.withLock { state -> Task<Void, Never>? in
                state.subscribers[id] = nil
                guard state.subscribers.isEmpty, let listener = state.listener else { return nil }
                state.listener = nil
                state.connected = false
                return listener
            }
            listener?.cancel()
        }
        return stream
    }

    struct Listening {
        var subscribers: [UUID: AsyncStream<Void>.Continuation] = [:]
        var listener: Task<Void, Never>?
        var connected = false
    }

    func broadcast(connected: Bool) {
        listening.withLock { state in
            state.connected = connected
            if connected { for subscriber in state.subscribers.values { subscriber.yield() } }
        }
    }

    func listen() async {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        backoff = .milliseconds(100)
                        self.broadcast(connected: true)
                        for try await _ in notifications { self.broadcast(connected: true) }
                    }
                }
            } catch {
                broadcast(connected: false)
                if Task.isCancelled { break }
                logger.warning(
                    "Listening for job notifications failed; polling until reconnected",
                    metadata: ["error": "\(Self.describe(error))"]
                )
            }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(5))
        }
    }

    func notify(_ connection: PostgresConnection, _ payload: String) async throws {
        try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
    }

    /// A NOTIFY in a statement of its own (no WAL to flush at its commit). A lost one costs a
    /// poll interval at most: workers poll too.
    func notifyNow(_ payload: String) async {
        _ = try? await withConnection { connection in try await self.notify(connection, payload) }
    }
}
