import Foundation
import Queue
import QueueSQLite
import QueueTestKit
import Testing

/// The JobStore and dashboard storage conformance suites against SQLite: every check on its
/// own temporary database file, with four `SQLiteJobStore` instances on it standing for four
/// worker processes.
@Suite("SQLiteJobStore conformance")
struct SQLiteConformanceTests {
    @Test(arguments: JobStoreConformance.Check.allCases)
    func conformance(_ check: JobStoreConformance.Check) async throws {
        try await Self.withHandles("conformance-\(check.rawValue)") { handles in try await check.run(handles) }
    }

    @Test(arguments: DashboardStorageConformance.Check.allCases)
    func dashboard(_ check: DashboardStorageConformance.Check) async throws {
        try await Self.withHandles("dashboard-\(check.rawValue)") { handles in try await check.run(handles) }
    }

    /// Runs `body` with a factory of four handles on a new database file in a temporary
    /// directory named after `label`, removed afterwards.
    static func withHandles(
        _ label: String,
        _ body: (@escaping @Sendable (TestClock) throws -> [SQLiteJobStore]) async throws -> Void
    ) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("jobctl-\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        try await body { clock in try (0..<4).map { _ in try SQLiteJobStore(path: path, clock: clock.now) } }
    }
}
