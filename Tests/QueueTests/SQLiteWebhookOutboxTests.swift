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
        try await SQLiteConformanceTests.withHandles("outbox-\(check.rawValue)") { handles in
            try await check.run(handles)
        }
    }
}
