import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A damaged SQLite file and one reached through two hard links: every command says so on one
/// line with its code and exits 1 at once; a long-running worker stays up, unhealthy, saying
/// how to recover (docs/operations.md).
@Suite("Damaged and doubly linked databases", .serialized, .timeLimit(.minutes(3)))
struct DatabaseFaultTests {
    /// A database with three queued jobs whose pages `damage` names are overwritten (their
    /// b-tree headers become garbage), or whose header is no longer SQLite's.
    static func damagedDatabase(_ directory: TemporaryDirectory, pages damage: [String]?) async throws -> String {
        let db = directory.file("jobs.sqlite")
        for _ in 0..<3 {
            let result = try await Jobctl.run([
                "submit", try await Fixtures.shared.path(.basic), "--db", db, "--preset", "low",
            ])
            try #require(result.status == 0, "\(result.stderr)")
        }
        // Everything into the main file, so the damage below is what SQLite reads.
        try await ProcessRunner.check("sqlite3", [db, "PRAGMA wal_checkpoint(TRUNCATE)"])
        var data = try Data(contentsOf: URL(fileURLWithPath: db))
        guard let damage else {
            data.replaceSubrange(0..<16, with: Data("not a database!!".utf8))
            try data.write(to: URL(fileURLWithPath: db))
            return db
        }
        let pageSize = Int(data[16]) << 8 | Int(data[17])
        let roots = try await ProcessRunner.check("sqlite3", [db, "SELECT name, rootpage FROM sqlite_master"])
            .stdoutText
        for line in roots.split(separator: "\n") {
            let parts = line.split(separator: "|")
            guard parts.count == 2, damage.contains(String(parts[0])), let page = Int(parts[1]) else { continue }
            let start = (page - 1) * pageSize
            data.replaceSubrange(start..<start + 8, with: Data(repeating: 0xFF, count: 8))
        }
        try data.write(to: URL(fileURLWithPath: db))
        return db
    }

    @Test(arguments: [["jobs_queued", "jobs"], nil])
    func everyCommandStopsAtOnceWithDatabaseCorrupt(_ damage: [String]?) async throws {
        try await withTemporaryDirectory("corrupt") { directory in
            let db = try await Self.damagedDatabase(directory, pages: damage)
            for command in [
                ["list"], ["list", "--status", "unknown"],
                ["submit", try await Fixtures.shared.path(.basic), "--preset", "low"],
            ] {
                let result = try await Jobctl.run(command + ["--db", db])
                #expect(result.status == 1, "\(command): \(result.stderr)")
                #expect(
                    result.stderr.hasPrefix("error: database_corrupt: the job database \(db) is damaged"),
                    "\(command): \(result.stderr)"
                )
                #expect(
                    result.stderr.contains(".dump") && result.stderr.split(separator: "\n").count == 1,
                    "\(result.stderr)"
                )
            }
            // `worker --once` ends at once, exit 1, instead of retrying every 10 s for ever.
            let worker = try JobctlProcess(["worker", "--db", db, "--once"], log: directory.file("worker.log"))
            let exit = try await worker.waitForExit(timeout: .seconds(30))
            #expect(exit?.status == 1, "\(worker.log)")
            #expect(worker.log.contains("error: database_corrupt:"), "\(worker.log)")
        }
    }

    @Test func aLongRunningWorkerOnADamagedDatabaseIsUnhealthy() async throws {
        try await withTemporaryDirectory("corrupt-health") { directory in
            let db = try await Self.damagedDatabase(directory, pages: ["jobs_queued", "jobs"])
            let worker = try JobctlProcess(
                ["worker", "--db", db, "--metrics-port", "0", "--metrics-host", "127.0.0.1", "--log-format", "json"],
                log: directory.file("worker.log")
            )
            defer { worker.signal(SIGKILL) }
            let port = try await MetricsTests.port(of: worker)
            var health: (status: Int, body: String) = (0, "")
            #expect(
                try await eventually(within: .seconds(30)) {
                    health = try await MetricsTests.get("http://127.0.0.1:\(port)/healthz")
                    return health.status == 503
                },
                "\(health)"
            )
            #expect(health.body.contains("damaged") && health.body.contains("database_corrupt"), "\(health.body)")
            #expect(worker.exited == nil, "the worker stays up")
            #expect(worker.log.contains("The job database is damaged") && worker.log.contains(".dump"), "\(worker.log)")
        }
    }

    /// Two names for one SQLite file are two write-ahead logs: jobs vanish. Refused.
    @Test func aDatabaseWithTwoHardLinksIsRefused() async throws {
        try await withTemporaryDirectory("hardlink") { directory in
            let db = directory.file("jobs.sqlite")
            #expect(try await Jobctl.run(["migrate", "--db", db]).status == 0)
            let other = directory.file("other.sqlite")
            #expect(link(db, other) == 0)
            for path in [db, other] {
                let result = try await Jobctl.run(["list", "--db", path])
                #expect(result.status == 1, "\(result.stderr)")
                #expect(
                    result.stderr.hasPrefix("error: database_unavailable: the job database \(path) has 2 hard links"),
                    "\(result.stderr)"
                )
            }
            let worker = try JobctlProcess(["worker", "--db", other, "--once"], log: directory.file("worker.log"))
            #expect(try await worker.waitForExit(timeout: .seconds(30))?.status == 1, "\(worker.log)")
            #expect(throws: JobStoreError.self) { try SQLiteJobStore(path: db) }
            #expect(unlink(other) == 0)
            #expect(try await Jobctl.run(["list", "--db", db]).status == 0, "one name again: fine")
        }
    }

    /// SIGHUP (the terminal closed) drains like SIGTERM instead of killing the worker mid-job.
    @Test func sighupDrainsAndHandsBack() async throws {
        try await withTemporaryDirectory("sighup-worker") { directory in
            let db = directory.file("jobs.sqlite")
            let submitted = try await Jobctl.run([
                "submit", try await Fixtures.shared.path(.long), "--db", db, "--preset", "highest", "-o",
                directory.file("long.mp4"),
            ])
            try #require(submitted.status == 0)
            let id = JobID(submitted.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            let store = try SQLiteJobStore(path: db)
            let worker = try JobctlProcess(["worker", "--db", db, "--drain", "1s"], log: directory.file("worker.log"))
            #expect(
                try await eventually(within: .seconds(60)) {
                    try await store.job(id)?.status == .reading
                        && directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }
                }
            )
            worker.signal(SIGHUP)
            let exit = try #require(try await worker.waitForExit(timeout: .seconds(20)))
            #expect(exit.status == 0, "\(worker.log)")
            #expect(worker.log.contains("Worker draining") && worker.log.contains("Job handed back"), "\(worker.log)")
            #expect(try await store.job(id)?.status == .unknown)
            #expect(!directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }, "\(directory.contents())")
        }
    }
}
