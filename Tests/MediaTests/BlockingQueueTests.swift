import Foundation
import MediaTestKit
import Synchronization
import Testing

@testable import Media

/// The bounded queue between reader stages: by count, and by weight (a packet's bytes).
@Suite("Blocking queue")
struct BlockingQueueTests {
    @Test("a push waits while the queued weight would pass the bound; one element always goes in, however heavy")
    func weight() async throws {
        let queue = BlockingQueue<Int>(capacity: 10, maxWeight: 10) { $0 }
        #expect(queue.push(6))
        let pushed = Atomic<Bool>(false)
        let thread = Thread {
            queue.push(6)
            pushed.store(true, ordering: .sequentiallyConsistent)
        }
        thread.start()
        let waits = await holds(for: .milliseconds(200)) { !pushed.load(ordering: .sequentiallyConsistent) }
        #expect(waits, "6 + 6 passed a bound of 10")
        #expect(queue.pop() == 6)
        let late = await eventually(within: .seconds(10)) { pushed.load(ordering: .sequentiallyConsistent) }
        #expect(late, "the push did not go in once there was room")
        #expect(queue.pop() == 6)
        // Heavier than the whole bound, into an empty queue: let in, or nothing would ever move.
        #expect(queue.push(50))
        #expect(queue.pop() == 50)
    }

    @Test("a popped element is released at once, while others are still queued")
    func releasesPopped() {
        final class Payload {}
        let queue = BlockingQueue<Payload>(capacity: 64)
        weak var first: Payload?
        weak var second: Payload?
        do {
            let a = Payload()
            let b = Payload()
            first = a
            second = b
            queue.push(a)
            queue.push(b)
        }
        _ = queue.pop()
        // Only the queue could still hold it: a kept slot held up to 63 consumed 1080p packets
        // (40 MiB at 110 Mb/s) until the queue drained.
        #expect(first == nil, "the queue kept a popped element alive")
        #expect(second != nil, "the queued element was released early")
        _ = queue.pop()
        #expect(second == nil)
    }
}
