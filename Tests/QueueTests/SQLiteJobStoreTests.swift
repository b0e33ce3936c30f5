import Foundation
import MediaTestKit
import Queue
import QueueMigrations
import QueueSQLite
import Testing

/// What only the SQLite store has: a file that outlives the process, and the migrations.
@Suite("SQLiteJobStore")
struct SQLiteJobStoreTests {
    /// Runs `sql` with the sqlite3 CLI, waiting for the lock as long as a store might hold it.
    @discardableResult
    static func sqlite3(_ path: String, _ sql: String) async throws -> ProcessResult {
        try await ProcessRunner.check("sqlite3", ["-cmd", ".timeout 10000", path, sql])
    }

    /// The migrations GRDB's migrator recorded, in order.
    static func appliedMigrations(_ path: String) async throws -> [String] {
        try await sqlite3(path, "SELECT identifier FROM grdb_migrations ORDER BY identifier").stdoutText
            .split(separator: "\n").map(String.init)
    }

    static func temporaryDirectory() throws -> URL {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
            .appendingPathComponent("jobctl-sqlite-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("a job survives closing and reopening the file; opening again migrates nothing twice")
    func reopen() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        let now = Date(timeIntervalSince1970: 1_767_225_600.123)
        var id: JobID?
        do {
            let store = try SQLiteJobStore(path: path, clock: { now })
            id = try await store.submit(
                JobRequest(input: "/data/in.mov", output: "/out/clip.mp4", preset: "low", idempotencyKey: "k")
            ).job.id
            try await store.migrate()
        }
        let reopened = try SQLiteJobStore(path: path, clock: { now })
        try await reopened.migrate()
        let submitted = try #require(id)
        let job = try #require(try await reopened.job(submitted))
        #expect(job.input == "/data/in.mov")
        #expect(job.status == .unknown)
        let again = try await reopened.submit(
            JobRequest(input: "/data/other.mov", output: "/out/other.mp4", preset: "low", idempotencyKey: "k")
        )
        #expect(again.created == false)
        #expect(again.job.id == submitted)
    }

    @Test("a database made before GRDB's migrator (schema_migrations) is adopted: nothing runs twice, its jobs stay")
    func legacyHistoryAdopted() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        let id = try await SQLiteJobStore(path: path).submit(
            JobRequest(input: "/data/in.mov", output: "/out/a.mp4", preset: "low")
        ).job.id
        // As an earlier jobctl left it: its own history table, no grdb_migrations.
        let names = Migrations.sqlite.map { "('\($0.name)', 0)" }.joined(separator: ", ")
        try await Self.sqlite3(
            path,
            "DROP TABLE grdb_migrations; CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL); INSERT INTO schema_migrations VALUES \(names);"
        )
        let reopened = try SQLiteJobStore(path: path)
        #expect(try await reopened.job(id)?.input == "/data/in.mov")
        #expect(try await Self.appliedMigrations(path) == Migrations.sqlite.map(\.name))
    }

    @Test("a database migrated by a newer jobctl is refused with a message that says so")
    func newerDatabaseRefused() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        _ = try SQLiteJobStore(path: path)
        try await Self.sqlite3(path, "INSERT INTO grdb_migrations VALUES ('9999_from_the_future')")
        do {
            _ = try SQLiteJobStore(path: path)
            Issue.record("a database with an unknown migration was opened")
        } catch let error as JobStoreError {
            #expect(error.code == .databaseUnavailable)
            #expect(error.message.contains("newer jobctl"), "\(error.message)")
        }
    }

    @Test("eight handles opening a new file at once all migrate it, once")
    func concurrentFirstOpen() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 { group.addTask { _ = try SQLiteJobStore(path: path) } }
            try await group.waitForAll()
        }
        #expect(try await Self.appliedMigrations(path) == Migrations.sqlite.map(\.name))
    }

    @Test("another process's commit is noticed (inotify on the write-ahead log): changes() yields")
    func changesYield() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        let watching = try SQLiteJobStore(path: path)
        try await watching.migrate()
        let writer = try SQLiteJobStore(path: path)
        let noticed = Task {
            for await _ in watching.changes() { return true }
            return false
        }
        // The watcher starts with the stream; submit until it notices (a first commit may land
        // before its watch is in place), for at most 10 s.
        let submitting = Task {
            for _ in 0..<100 where !Task.isCancelled {
                _ = try await writer.submit(JobRequest(input: "/data/in.mov", output: "/out/clip.mp4", preset: "low"))
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(10))
            noticed.cancel()
        }
        #expect(await noticed.value, "no change noticed within 10 s")
        submitting.cancel()
        timeout.cancel()
    }

    @Test("a database that cannot be opened is database_unavailable")
    func unavailable() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("no/such/folder/jobs.sqlite").path
        do {
            _ = try SQLiteJobStore(path: path)
            Issue.record("opened \(path)")
        } catch let error as JobStoreError {
            #expect(error.code == .databaseUnavailable)
            #expect(error.message.contains(path), "the message names the file: \(error.message)")
        }
    }

    @Test("every migration file is listed, in order, with its SQL")
    func migrationsListed() throws {
        let folder = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("migrations/sqlite")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            $0.hasSuffix(".sqlite.sql")
        }.sorted()
        #expect(!files.isEmpty)
        let names = files.map { String($0.dropLast(".sqlite.sql".count)) }
        #expect(
            Migrations.sqlite.map(\.name) == names,
            "migrations/sqlite has \(names); Migrations.sqlite lists \(Migrations.sqlite.map(\.name))"
        )
        for (migration, file) in zip(Migrations.sqlite, files) {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(migration.sql == text, "\(migration.name): the embedded SQL is the file's")
            #expect(
                migration.name.prefix(5).allSatisfy { $0.isNumber || $0 == "_" }
                    && migration.name.dropFirst(4).first == "_",
                "\(migration.name): NNNN_name"
            )
        }
    }
}
