import MediaTestKit
import Queue
import Synchronization
import Testing

@Suite("ChangeFeed")
struct ChangeFeedTests {
    @Test("kinds sent before the consumer reads are one element, their union; nothing is lost or repeated")
    func coalesces() async {
        let feed = ChangeFeed()
        feed.send(.jobQueued)
        feed.send(.webhookDue)
        feed.send([])
        var iterator = feed.makeAsyncIterator()
        #expect(await iterator.next() == [.jobQueued, .webhookDue])
        feed.send(.cancelRequested)
        #expect(await iterator.next() == .cancelRequested)
        feed.finish()
        #expect(await iterator.next() == nil)
    }

    @Test("a consumer that stops (its task cancelled) ends the feed: onTermination runs once")
    func termination() async throws {
        let ended = Atomic<Int>(0)
        let feed = ChangeFeed { ended.add(1, ordering: .relaxed) }
        let received = Atomic<Int>(0)
        let consumer = Task { for await _ in feed { received.add(1, ordering: .relaxed) } }
        // The consumer is iterating once it has taken a change.
        feed.send(.jobQueued)
        #expect(await eventually(within: .seconds(10)) { received.load(ordering: .relaxed) == 1 })
        consumer.cancel()
        await consumer.value
        #expect(ended.load(ordering: .relaxed) == 1)
    }
}
