import Foundation

/// A bounded FIFO between two threads: the per-track serialization queue of AVFoundation's reader/writer guide.
///
/// `push` blocks while the queue is full (backpressure: the consumer is not "ready for more
/// media data"), `pop` blocks while it is empty. `close()` ends the stream after the queued
/// elements; `cancel()` drops everything and wakes both sides for good, so a stage that stops
/// early never leaves its producer blocked.
/// Sendable: every field is read and written under `condition` (an `NSCondition`).
final class BlockingQueue<Element>: @unchecked Sendable {
    private let condition = NSCondition()
    /// Queued elements from `head` on; a popped slot is cleared at once, so the queue never
    /// keeps a consumed element (a packet, a decoded picture) alive.
    private var items: [Element?] = []
    private var head = 0
    private let capacity: Int
    private var closed = false
    private var cancelled = false
    /// A bound on the queued elements' total weight as well as their number (`weight`: an
    /// element's bytes); one element is always let in, however heavy.
    private let maxWeight: Int
    private let weight: (Element) -> Int
    private var queuedWeight = 0

    init(capacity: Int, maxWeight: Int = .max, weight: @escaping (Element) -> Int = { _ in 0 }) {
        precondition(capacity > 0)
        self.capacity = capacity
        self.maxWeight = maxWeight
        self.weight = weight
        items.reserveCapacity(capacity)
    }

    /// Appends `element`, waiting for room. Returns `false` (and drops it) once cancelled or closed.
    @discardableResult
    func push(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        let heft = weight(element)
        while (items.count - head >= capacity || (items.count > head && queuedWeight + heft > maxWeight))
            && !cancelled && !closed
        {
            condition.wait()
        }
        guard !cancelled && !closed else { return false }
        items.append(element)
        queuedWeight += heft
        condition.broadcast()
        return true
    }

    /// Whether nothing is queued now.
    var isEmpty: Bool {
        condition.lock()
        defer { condition.unlock() }
        return items.count == head
    }

    /// The next element, waiting for one; `nil` once the queue is closed and drained, or cancelled.
    func pop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.count == head && !closed && !cancelled {
            condition.wait()
        }
        guard !cancelled, head < items.count else { return nil }
        guard let element = items[head] else { preconditionFailure("a queued slot is empty") }
        items[head] = nil
        queuedWeight -= weight(element)
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 {
            items.removeFirst(head)
            head = 0
        }
        condition.broadcast()
        return element
    }

    /// No more elements will be pushed; `pop` returns the queued ones, then `nil`.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Drops the queued elements and wakes every waiter; later pushes are dropped, pops return `nil`.
    func cancel() {
        condition.lock()
        cancelled = true
        items.removeAll()
        queuedWeight = 0
        head = 0
        condition.broadcast()
        condition.unlock()
    }
}
