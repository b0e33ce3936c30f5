import Foundation
import Logging
import PostgresNIO
import Queue

// LISTEN/NOTIFY: `changes()` and the listening connection.
extension PostgresJobStore {
    // MARK: Notifications

    /// Yields on every `pg_notify('jobctl', …)` (a submit, a cancel, a retry, an event), and once
    /// on each (re)connection, since notifications sent while disconnected are lost.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let feed = changes(wanted: { .any })
        let forwarding = Task {
            for await _ in feed { continuation.yield() }
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return stream
    }

    /// The notifications of the kinds `wanted` asks for (by payload: `job`, `cancel`,
    /// `webhook`), and `.any` on each (re)connection. One listening connection per store,
    /// however many subscribers (the worker's claim loop and its webhook dispatcher share it);
    /// it closes with the last subscriber. A lost connection is reopened with backoff; workers
    /// keep polling meanwhile. A busy worker wants cancellations only: the stream of submits
    /// no longer wakes it (each wake-up of a worker running jobs was a cancellation query).
    public func changes(wanted: @escaping @Sendable () -> StoreChange) -> ChangeFeed {
        let id = UUID()
        let feed = ChangeFeed { [weak self] in
            let listener = self?.listening.withLock { state -> Task<Void, Never>? in
                state.subscribers[id] = nil
                guard state.subscribers.isEmpty, let listener = state.listener else { return nil }
                state.listener = nil
                state.connected = false
                return listener
            }
            listener?.cancel()
        }
        listening.withLock { state in
            state.subscribers[id] = Subscriber(feed: feed, wanted: wanted)
            if state.listener == nil {
                state.listener = Task { [self] in await listen() }
            } else if state.connected {
                feed.send(.any)
            }
        }
        return feed
    }

    struct Subscriber {
        let feed: ChangeFeed
        let wanted: @Sendable () -> StoreChange
    }

    struct Listening {
        var subscribers: [UUID: Subscriber] = [:]
        var listener: Task<Void, Never>?
        var connected = false
    }

    /// What a notification's payload says changed.
    static func change(payload: String) -> StoreChange {
        switch payload {
        case "job": .jobQueued
        case "cancel": .cancelRequested
        case "webhook": .webhookDue
        default: .any
        }
    }

    /// Tells the subscribers that want `kinds`; `connected`: the listening connection is up
    /// (after a reconnection every subscriber hears `.any`: notifications may have been lost).
    func broadcast(_ kinds: StoreChange, connected: Bool) {
        let subscribers = listening.withLock { state in
            state.connected = connected
            return connected ? Array(state.subscribers.values) : []
        }
        for subscriber in subscribers {
            let wanted = kinds == .any ? kinds : kinds.intersection(subscriber.wanted())
            subscriber.feed.send(wanted)
        }
    }

    func listen() async {
        var backoff = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.channel) { notifications in
                        backoff = .milliseconds(100)
                        self.broadcast(.any, connected: true)
                        for try await notification in notifications {
                            self.broadcast(Self.change(payload: notification.payload), connected: true)
                        }
                    }
                }
            } catch {
                broadcast([], connected: false)
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
