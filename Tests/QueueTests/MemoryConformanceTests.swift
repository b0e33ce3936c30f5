import Foundation
import Queue
import QueueTestKit
import Testing

/// The whole conformance kit against the in-memory store: four "processes" sharing one instance.
/// Fast (no file, no server), and the reference the SQL stores are held to: every status
/// change in it is `JobStateMachine.next`.
@Suite("MemoryJobStore conformance")
struct MemoryConformanceTests {
    @Test(arguments: JobStoreConformance.Check.allCases)
    func conformance(_ check: JobStoreConformance.Check) async throws {
        try await check.run { clock in
            let store = MemoryJobStore(clock: clock.now)
            return [store, store, store, store]
        }
    }

    @Test(arguments: WebhookOutboxConformance.Check.allCases)
    func outbox(_ check: WebhookOutboxConformance.Check) async throws {
        try await check.run { clock in
            let store = MemoryJobStore(clock: clock.now)
            return [store, store, store, store]
        }
    }

    @Test(arguments: DashboardStorageConformance.Check.allCases)
    func dashboard(_ check: DashboardStorageConformance.Check) async throws {
        try await check.run { clock in
            let store = MemoryJobStore(clock: clock.now)
            return [store, store, store, store]
        }
    }
}
