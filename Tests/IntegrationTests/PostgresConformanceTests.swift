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

    /// Runs `body` with a factory of four handles on a new database named after `label`.
    static func with(
        _ label: String,
        _ body: (@escaping @Sendable (TestClock) async throws -> [PostgresJobStore]) async throws -> Void
    ) async throws {
        let handles = PostgresHandles()
        defer { handles.close() }
        try await body { clock in try await handles.open(label, clock: clock) }
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
        try await PostgresHandles.with(check.rawValue) { handles in try await check.run(handles) }
    }

    @Test(arguments: DashboardStorageConformance.Check.allCases)
    func dashboard(_ check: DashboardStorageConformance.Check) async throws {
        try await PostgresHandles.with("dash-\(check.rawValue)") { handles in try await check.run(handles) }
    }
}

@Suite("PostgresJobStore webhook outbox conformance")
struct PostgresWebhookOutboxTests {
    @Test(arguments: WebhookOutboxConformance.Check.allCases)
    func conformance(_ check: WebhookOutboxConformance.Check) async throws {
        try await PostgresHandles.with(check.rawValue) { handles in try await check.run(handles) }
    }
}
