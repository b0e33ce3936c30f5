import Synchronization

/// What a change notification is about, as far as the store can tell. PostgreSQL's NOTIFY
/// payloads say it; SQLite's inotify cannot, so it reports `.any`.
public struct StoreChange: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A job may have become claimable: a submit, a retry, a retryable failure.
    public static let jobQueued = StoreChange(rawValue: 1 << 0)
    /// A cancellation of a running job was requested.
    public static let cancelRequested = StoreChange(rawValue: 1 << 1)
    /// A webhook delivery became due.
    public static let webhookDue = StoreChange(rawValue: 1 << 2)
    /// Anything: the store cannot tell, or notifications may have been lost (a reconnection).
    public static let any: StoreChange = [.jobQueued, .cancelRequested, .webhookDue]
}

/// One subscriber's change notifications, coalesced: a burst of them is one element, the
/// union of their kinds, so a slow consumer never falls behind and never misses a kind.
public final class ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = StoreChange

    private let pending = Mutex<StoreChange>([])
    private let signals: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// - Parameter onTermination: called once the consumer stops (its task cancelled, or the
    ///   feed finished).
    public init(onTermination: @escaping @Sendable () -> Void = {}) {
        (signals, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.onTermination = { _ in onTermination() }
    }

    public func send(_ kinds: StoreChange) {
        guard !kinds.isEmpty else { return }
        pending.withLock { $0.formUnion(kinds) }
        continuation.yield()
    }

    public func finish() { continuation.finish() }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var signals: AsyncStream<Void>.Iterator
        let feed: ChangeFeed

        public mutating func next() async -> StoreChange? {
            // A kind sent between the wake-up and the take is taken now; its own wake-up then
            // finds nothing and waits again.
            while await signals.next() != nil {
                let kinds = feed.pending.withLock { pending in
                    defer { pending = [] }
                    return pending
                }
                if !kinds.isEmpty { return kinds }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(signals: signals.makeAsyncIterator(), feed: self)
    }
}
