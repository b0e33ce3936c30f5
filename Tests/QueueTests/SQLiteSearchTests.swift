import Foundation
import Queue
import Testing

@testable import QueueSQLite

/// The SQLite store's text search index (migration 0010): what happens to it when the jobs
/// under it move. The answers themselves are the conformance suite's (`listConditions`, before,
/// during and after indexing).
@Suite("SQLite text search index")
struct SQLiteSearchTests {
    static func search(_ store: SQLiteJobStore, _ term: String) async throws -> [String] {
        var query = JobQuery(limit: 100)
        query.conditions = [JobCondition(.text, .containsAny([term]))]
        return try await store.jobs(query).map(\.input).sorted()
    }

    static func submit(_ store: SQLiteJobStore, _ count: Int) async throws {
        for index in 0..<count {
            _ = try await store.submit(
                JobRequest(input: "/media/talk-\(index).mov", output: "/out/\(index).mp4", preset: "low")
            )
        }
    }

    @Test(
        "batches index every job once; a VACUUM that renumbers rowids, or the last job indexed deleted, starts it over"
    )
    func rebuilds() async throws {
        let directory = try SQLiteJobStoreTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("jobs.sqlite").path
        let store = try SQLiteJobStore(path: path)
        try await Self.submit(store, 30)
        #expect(try await store.indexSearchText(limit: 20) == 20)
        #expect(try await store.indexSearchText(limit: 20) == 10)
        #expect(try await store.indexSearchText(limit: 20) == 0)
        #expect(
            try await Self.search(store, "talk-2")
                == (["/media/talk-2.mov"] + (20..<30).map { "/media/talk-\($0).mov" }).sorted()
        )

        // A job in the middle goes and VACUUM runs. SQLite may renumber the rowids of a table
        // without an INTEGER PRIMARY KEY then; whether this one did or not, the answers hold.
        try await SQLiteJobStoreTests.sqlite3(path, "DELETE FROM jobs WHERE input = '/media/talk-5.mov'; VACUUM;")
        _ = try await store.indexSearchText(limit: 100)
        #expect(try await Self.search(store, "talk-29") == ["/media/talk-29.mov"])
        // Renumbered as such a VACUUM would: every job after the gap moves down a rowid. Read
        // through the old index, `talk-29` would be looked for where `talk-28` is now.
        try await SQLiteJobStoreTests.sqlite3(
            path,
            """
            UPDATE jobs SET rowid = -rowid WHERE rowid > (SELECT rowid FROM jobs WHERE input = '/media/talk-4.mov');
            UPDATE jobs SET rowid = -rowid - 1 WHERE rowid < 0;
            """
        )
        // Until the index is built again, searches read the rows instead of trusting it.
        #expect(try await Self.search(store, "talk-29") == ["/media/talk-29.mov"], "not through the stale index")
        #expect(try await store.indexSearchText(limit: 100) == 29, "the index starts over")
        #expect(try await Self.search(store, "talk-29") == ["/media/talk-29.mov"])
        #expect(try await Self.search(store, "talk-5").isEmpty)

        // The last job indexed goes: the index starts over too.
        try await SQLiteJobStoreTests.sqlite3(path, "DELETE FROM jobs WHERE input = '/media/talk-29.mov'")
        try await Self.submit(store, 1)
        #expect(try await store.indexSearchText(limit: 100) == 29)
        #expect(try await Self.search(store, "talk-0") == ["/media/talk-0.mov", "/media/talk-0.mov"])
        #expect(try await Self.search(store, "talk-29").isEmpty)
        #expect(try await store.indexSearchText(limit: 100) == 0, "nothing indexed twice")
    }

    @Test("a filter's statement is not kept: distinct filters leave a reader with what fixed listings need")
    func filtersAreNotKept() async throws {
        let directory = try SQLiteJobStoreTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteJobStore(path: directory.appendingPathComponent("jobs.sqlite").path)
        try await Self.submit(store, 3)
        let before = try await store.preparedStatements()
        // One shape per listing (`output:1`, `output:1,2`, …): each was prepared and kept for
        // good on the connection, 990 of them took a server from 82 to 442 MB (issue 42).
        for count in 1...60 {
            var query = JobQuery(limit: 10)
            query.conditions = [JobCondition(.output, .containsAny((1...count).map(String.init)))]
            _ = try await store.jobs(query)
        }
        _ = try await store.jobs(JobQuery(limit: 10))
        let after = try await store.preparedStatements()
        #expect(after - before < 10, "\(after - before) statements kept by 61 listings")
    }
}
