import Foundation
import MediaTestKit
import Queue
import QueuePostgres
import QueueTestKit
import Testing

/// Migration 0011 on PostgreSQL (issue 43): rows written before a job's role had a column are
/// moved over, as SQLite's 0013 does (`JobRoleTests.migratedRows`).
@Suite("PostgreSQL role migration")
struct PostgresRoleMigrationTests {
    @Test("rows written before roles had columns are moved over: keys out of the options, into the role")
    func migratedRows() async throws {
        let url = try await TestPostgres.shared.freshDatabase("roles")
        let store = try PostgresJobStore(url: url)
        let run = Task { await store.run() }
        defer { run.cancel() }
        try await store.migrate()
        let rows = try await LegacyRoleRows.submit(to: store)
        _ = try await ProcessRunner.check(
            "psql",
            [
                url, "-q", "-v", "ON_ERROR_STOP=1", "-c",
                "DELETE FROM jobctl.schema_migrations WHERE name = '0011_roles'; ALTER TABLE jobctl.jobs DROP COLUMN role; "
                    + rows.sql(table: "jobctl.jobs").replacingOccurrences(
                        of: "'not json'",
                        with: "'{\"name\":\"low\"}'"
                    ),
            ]
        )
        try await store.migrate()
        try await rows.expectMigrated(in: store)
        // The row given options that are JSON (PostgreSQL reads them as jsonb: text that is not
        // JSON would stop the migration, and jobctl never writes such text) is a child too.
        #expect(try await store.job(rows.ids[6])?.role == .child(part: nil))
    }
}
