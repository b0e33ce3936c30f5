import Foundation
import Queue
import QueueSQLite
import QueueTestKit
import Testing

/// The WebhookOutbox conformance suite against SQLite: every check on its own temporary
/// database file, with four `SQLiteJobStore` instances on it standing for four processes
/// (workers writing events, dispatchers claiming them).
@Suite("SQLiteJobStore webhook outbox conformance")
struct SQLiteWebhookOutboxTests {
    @Test(arguments: WebhookOutboxConformance.Check.allCases)
    func conformance(_ check: WebhookOutboxConformance.Check) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("jobctl-outbox-\(check.rawValue)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path

        try await check.run { clock in
            try (0..<4).map { _ in try SQLiteJobStore(path: path, clock: clock.now) }
        }
    }
}
