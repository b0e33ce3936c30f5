import MediaTestKit
import Queue
import Synchronization
import Testing

/// The loop around `ClaimLoopStateMachine`, with a driver of numbered items: slots freed before
/// an item's end (a worker reporting its outcome) are claimed again, and the loop still waits
/// for those items, uncancelled, before it returns.
@Suite("ClaimLoop")
struct ClaimLoopTests {
    final class Driver: ClaimLoopDriver {
        struct State {
            var next = 0
            var claims: [Int] = []
            var reporting: Set<Int> = []
            var ended: [Int: Bool] = [:]  // item: whether its task had been cancelled
        }
        let state = Mutex(State())
        let total: Int
        /// Opened by the test: until then every item stays "reporting" after freeing its slot
        /// (a cancelled task would stop waiting early, and say so).
        let gateOpen = Atomic<Bool>(false)

        init(total: Int) { self.total = total }

        func claim(limit: Int) async throws -> [Int] {
            state.withLock { state in
                let items = Array(state.next..<min(total, state.next + limit))
                state.next += items.count
                state.claims.append(items.count)
                return items
            }
        }

        func run(_ item: Int, slot: ClaimSlot) async {
            slot.free()
            _ = state.withLock { $0.reporting.insert(item) }
            while !gateOpen.load(ordering: .acquiring) && !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(5))
            }
            state.withLock { $0.ended[item] = Task.isCancelled }
        }

        var claimableChanges: StoreChange { .jobQueued }

        func classify(_ error: any Error) -> ClaimLoopStateMachine.ClaimFailure { .transient }
        func observe(_ event: ClaimLoopEvent) {}
    }

    @Test(
        "a slot freed before its item ends is claimed again; the loop returns only after every item ended, none cancelled"
    )
    func slotFreedEarly() async throws {
        let driver = Driver(total: 6)
        let loop = ClaimLoop(
            driver: driver,
            configuration: .init(concurrency: 2, drain: .stopClaiming(handBackAfter: .seconds(30))),
            pollInterval: .milliseconds(10),
            changes: nil
        )
        let running = Task { await loop.run() }
        // Two slots, six items that never end until the gate opens: only freed slots let the
        // loop claim all six.
        #expect(await eventually(within: .seconds(10)) { driver.state.withLock { $0.reporting.count } == 6 })
        #expect(driver.state.withLock { $0.claims.max() ?? 0 } <= 2, "a claim asked for more than the free slots")

        loop.stop()
        let waiting = await holds(for: .milliseconds(200)) { driver.state.withLock { $0.ended.isEmpty } }
        #expect(waiting, "items ended before the gate opened")
        let returnedEarly = Task {
            await running.value
            return driver.state.withLock { $0.ended.count }
        }
        driver.gateOpen.store(true, ordering: .releasing)
        #expect(await returnedEarly.value == 6, "the loop returned before its reporting items ended")
        #expect(driver.state.withLock { $0.ended.values.allSatisfy { !$0 } }, "an item's task was cancelled")
    }
}
