import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import Logging
import Media
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// What the second adversarial pass found in the HTTP API (issue 25), each pinned: what one
/// client can make the server or the database pay.
@Suite("HTTP API hardening")
struct APIHardeningTests {
    @Test("/healthz: one trivial statement at most once a second for 50 callers, never a count of the job table")
    func healthIsCheap() async throws {
        let directory = try TemporaryDirectory("health")
        defer { directory.remove() }
        let store = CountingStore(try SQLiteJobStore(path: directory.file("jobs.sqlite")))
        let app = Application(
            router: APIRoutes.router(
                APIConfiguration(store: store, catalog: try PresetCatalog(customFile: nil)),
                logger: Logger(label: "api-test")
            )
        )
        try await app.test(.router) { client in
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await client.execute(uri: "/healthz", method: .get).status }
                }
                for try await status in group { #expect(status == .ok) }
            }
        }
        #expect(store.count("statusCounts") == 0, "a health check counted the job table")
        #expect((1...3).contains(store.count("ping")), "\(store.count("ping")) pings for 50 health checks")
    }
}
