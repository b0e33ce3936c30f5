import Foundation
import Queue
import QueueMigrations
import QueueSQLite
import QueueTestKit
import Testing

/// A job's role in its graph (issue 43): its stored form, and the rows an earlier jobctl wrote
/// with the role as keys among the kind's options, moved over by migration 0013.
@Suite("Job roles")
struct JobRoleTests {
    static let part: JSONValue = .object(["index": .number(2), "part": .string("video"), "frames": .number(100)])
    static let every: [JobRole] = [
        .standalone, .parent(.split(.string("auto"))),
        .parent(.outputs(.array([.object(["kind": .string("waveform")])]))),
        .child(part: part), .child(part: nil),
    ]

    @Test("every role is stored and read back as itself; standalone is a NULL")
    func roundTrip() throws {
        for role in Self.every {
            let stored = try role.stored()
            #expect((stored == nil) == (role == .standalone))
            #expect(try JobRole(stored: stored, row: "job x") == role, "\(stored ?? "NULL")")
            // In the job JSON too, always present (`null` for standalone).
            let json = try JSONEncoder().encode(["role": role])
            #expect(try JSONDecoder().decode([String: JobRole].self, from: json)["role"] == role)
        }
        #expect(try JobRole.parent(.split(.string("30s"))).stored() == #"{"parent":{"split":"30s"}}"#)
        #expect(try JobRole.child(part: nil).stored() == #"{"child":{}}"#)
    }

    @Test(
        "text that is not one role is a damaged row, named",
        arguments: [
            "not json", "[]", "{}", #"{"parent":{}}"#, #"{"parent":{"split":"auto","outputs":[]}}"#,
            #"{"parent":{"split":"auto"},"child":{}}"#, #"{"child":{"part":1,"index":2}}"#, #"{"sibling":{}}"#,
            #"{"parent":{"split":null}}"#,
        ]
    )
    func damagedRoles(text: String) {
        do {
            let role = try JobRole(stored: text, row: "job 0193")
            Issue.record("\(text) read as \(role)")
        } catch let error as JobStoreError {
            #expect(error.code == .databaseCorrupt && error.message.hasPrefix("job 0193 has a role"), "\(error)")
        } catch {
            Issue.record("\(text): \(error)")
        }
    }

    @Test("a fan-out's child request is a child, with the part its kind gave it and nothing of the parent's")
    func childRequests() {
        var request = JobRequest(input: "/in.mov", output: "/out.mp4", preset: "low", webhook: "https://h.example/")
        request.idempotencyKey = "key"
        for (given, made) in [
            (JobRole.child(part: Self.part), JobRole.child(part: Self.part)),
            (.standalone, .child(part: nil)),
            (.parent(.split(.string("auto"))), .child(part: nil)),
        ] {
            request.role = given
            let child = request.child(of: "parent", index: 4, owner: "key-1")
            #expect(child.role == made && child.parent == "parent" && child.childIndex == 4 && child.owner == "key-1")
            #expect(child.webhook == nil && child.idempotencyKey == nil)
        }
    }

    @Test("rows written before roles had columns are moved over: keys out of the options, into the role")
    func migratedRows() async throws {
        let directory = try SQLiteJobStoreTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        let rows = try await LegacyRoleRows.submit(to: try SQLiteJobStore(path: path))
        _ = try await SQLiteJobStoreTests.sqlite3(
            path,
            "DELETE FROM grdb_migrations WHERE identifier = '0013_roles'; ALTER TABLE jobs DROP COLUMN role; "
                + rows.sql(table: "jobs")
        )
        let migrated = try SQLiteJobStore(path: path)
        try await migrated.migrate()
        try await rows.expectMigrated(in: migrated)
        // Options that are not JSON stay as they were (the row reads as damaged, as before);
        // the row still gets a child's role from its parent column.
        let damaged = try await SQLiteJobStoreTests.sqlite3(
            path,
            "SELECT preset_settings, role FROM jobs WHERE id = '\(rows.ids[6])'"
        )
        #expect(damaged.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == #"not json|{"child":{}}"#)
        #expect(try await SQLiteJobStoreTests.appliedMigrations(path) == Migrations.sqlite.map(\.name))
    }
}
