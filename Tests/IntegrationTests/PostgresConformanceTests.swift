import Foundation
import MediaTestKit
import Queue
import QueuePostgres
import QueueTestKit
import Synchronization
import Testing

/// Handles on one fresh PostgreSQL database, their connection pools running until `close()`.
final class PostgresHandles: Sendable {
    private let runs = Mutex<[Task<Void, Never>]>([])

    /// Four stores (four "processes") on a new database, sharing `clock`.
    func open(_ label: String, clock: TestClock) async throws -> [PostgresJobStore] {
        let url = try await TestPostgres.shared.freshDatabase(label)
        var stores: [PostgresJobStore] = []
        for _ in 0..<4 {
            let store = try PostgresJobStore(url: url, clock: clock.now)
            runs.withLock { $0.append(Task { await store.run() }) }
            stores.append(store)
        }
        try await stores[0].migrate()
        return stores
    }

    func close() {
        for run in runs.withLock({ $0 }) { run.cancel() }
    }
}

/// The JobStore conformance suite against a real PostgreSQL server (docs/spec.md §5: the same suite as
/// SQLite), each check on its own new database with four handles.
@Suite("PostgresJobStore conformance")
struct PostgresConformanceTests {
    @Test(arguments: JobStoreConformance.Check.allCases)
    func conformance(_ check: JobStoreConformance.Check) async throws {
        let handles = PostgresHandles()
        defer { handles.close() }
        try await check.run { clock in try await handles.open(check.rawValue, clock: clock) }
    }
}

@Suite("PostgresJobStore webhook outbox conformance")
struct PostgresWebhookOutboxTests {
    @Test(arguments: WebhookOutboxConformance.Check.allCases)
    func conformance(_ check: WebhookOutboxConformance.Check) async throws {
        let handles = PostgresHandles()
        defer { handles.close() }
        try await check.run { clock in try await handles.open(check.rawValue, clock: clock) }
    }
}
