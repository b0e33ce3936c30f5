import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// A worker sweeps its staging directory when it starts: what dead workers left for jobs that
/// have ended goes; files of running jobs, recent files and files that are not a job's stay.
@Suite("Staging sweep", .timeLimit(.minutes(2)))
struct StagingSweepTests {
    @Test func aStartingWorkerRemovesLeftoversOfEndedJobsOnly() async throws {
        let directory = try TemporaryDirectory("sweep")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        let staging = directory.file("staging")
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        let input = try await Fixtures.shared.path(.basic)
        func submit() async throws -> JobID {
            let result = try await Jobctl.run([
                "submit", input, "--db", db, "--preset", "low", "-o", "https://bucket.example/out.mp4",
            ])
            try #require(result.status == 0, "\(result.stderr)")
            return JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let ended = try await submit()
        let endedRecently = try await submit()
        let running = try await submit()
        for id in [ended, endedRecently] {
            #expect(try await Jobctl.run(["cancel", id.rawValue, "--db", db]).status == 0)
        }
        let store = try SQLiteJobStore(path: db)
        let identity = WorkerIdentity(name: "elsewhere", host: "other-host", pid: 1, version: "test")
        let claimed = try await store.claim(as: identity, limit: 1, lease: .seconds(600))
        try #require(claimed.map(\.job.id) == [running])

        let old = Date(timeIntervalSinceNow: -3600)
        let files: [(name: String, date: Date)] = [
            ("\(ended).mp4", old),
            (".\(ended).mp4.\(ended)-2.jobctl.tmp", old),
            (".thumb-001.jpg.\(ended)-1.jobctl.tmp", old),  // a set of files (thumbnails) being uploaded
            (".thumb-001.jpg.\(running)-1.jobctl.tmp", old),
            ("\(JobID.make()).mov", old),
            ("\(running).mp4", old),
            ("\(endedRecently).mp4", Date()),
            ("notes.txt", old),
        ]
        for file in files {
            let path = (staging as NSString).appendingPathComponent(file.name)
            try #require(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
            try FileManager.default.setAttributes([.modificationDate: file.date], ofItemAtPath: path)
        }

        let worker = try JobctlProcess(
            ["worker", "--db", db, "--once", "--staging-dir", staging],
            log: directory.file("w.log")
        )
        let exit = try await worker.waitForExit(timeout: .seconds(60))
        #expect(exit?.status == 0, "\(worker.log)")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: staging))
        #expect(
            left == ["\(running).mp4", ".thumb-001.jpg.\(running)-1.jobctl.tmp", "\(endedRecently).mp4", "notes.txt"],
            "\(worker.log)"
        )
        #expect(worker.log.contains("Removed leftover staging files of ended jobs"))
        #expect(try await store.job(running)?.status == .reading, "the running job is untouched")
    }
}
