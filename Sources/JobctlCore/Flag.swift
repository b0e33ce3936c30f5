import Synchronization

/// A flag set once, from any thread, and read from any other: "stop", "cancelled", "lease
/// lost". The one atomic flag of the code base (an FFmpeg interrupt callback, a watcher thread
/// and a connection wait each read one).
public final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    public init() {}

    public var isSet: Bool { value.load(ordering: .acquiring) }

    public func set() { value.store(true, ordering: .releasing) }
}
