import Foundation
import MediaTestKit
import Queue
import QueuePostgres
import QueueSQLite
import Testing

/// A row whose status or kind this version does not know (a newer jobctl wrote it, or the row is
/// damaged) is an error naming the job, in both stores: never read as a queued export job.
@Suite("Stored values this version does not know")
struct StoredValueTests {
    @Test("SQLite: an unknown status or kind is database_corrupt, naming the job; the job is not claimed")
    func sqlite() async throws {
        let directory = try TemporaryDirectory("stored-value")
        defer { directory.remove() }
        let path = directory.file("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        let job = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/a.mp4", preset: "low")).job
        let other = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/b.mp4", preset: "low")).job
        // As a newer jobctl would, with a migration that widened the CHECK constraints.
        try await ProcessRunner.check(
            "sqlite3",
            [
                path,
                "PRAGMA ignore_check_constraints = ON; UPDATE jobs SET status = 'paused' WHERE id = '\(job.id)'; UPDATE jobs SET kind = 'transmogrify' WHERE id = '\(other.id)'",
            ]
        )
        try await expectUnknown(in: store, job: job.id, other: other.id, value: "paused")
    }

    @Test("PostgreSQL: an unknown status or kind is database_corrupt, naming the job; the job is not claimed")
    func postgres() async throws {
        let url = try await TestPostgres.shared.freshDatabase("storedvalue")
        try await PostgresJobStore.withStore(url: url) { store in
            let job = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/a.mp4", preset: "low")).job
            let other = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/b.mp4", preset: "low"))
                .job
            try await ProcessRunner.check(
                "psql",
                [
                    url, "-q", "-c",
                    "ALTER TABLE jobctl.jobs DROP CONSTRAINT IF EXISTS jobs_status_check, DROP CONSTRAINT IF EXISTS jobs_kind_check",
                ]
            )
            try await ProcessRunner.check(
                "psql",
                [url, "-q", "-c", "UPDATE jobctl.jobs SET status = 'paused' WHERE id = '\(job.id)'"]
            )
            try await ProcessRunner.check(
                "psql",
                [url, "-q", "-c", "UPDATE jobctl.jobs SET kind = 'transmogrify' WHERE id = '\(other.id)'"]
            )
            try await expectUnknown(in: store, job: job.id, other: other.id, value: "paused")
        }
    }

    private func expectUnknown(in store: any JobStore, job: JobID, other: JobID, value: String) async throws {
        for (id, word) in [(job, value), (other, "transmogrify")] {
            do {
                let read = try await store.job(id)
                Issue.record("read \(id) as \(String(describing: read?.status)) \(String(describing: read?.kind))")
            } catch let error as JobStoreError {
                #expect(error.code == .corrupt)
                #expect(error.message.contains("\(id)") && error.message.contains(word), "\(error.message)")
            }
        }
        // The claim query does not select a row whose status it does not know; the other, an
        // unknown kind in a queued row, fails the claim loudly instead of running as an export.
        do {
            let claimed = try await store.claim(
                as: WorkerIdentity(name: "w", host: "h", pid: 1, version: "t"),
                limit: 10,
                lease: .seconds(30)
            )
            Issue.record("claimed \(claimed.map(\.job.id))")
        } catch let error as JobStoreError {
            #expect(error.code == .corrupt)
        }
    }
}
