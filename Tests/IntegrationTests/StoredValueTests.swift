import Foundation
import JobKinds
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import QueuePostgres
import QueueSQLite
import SafeHTTP
import Testing

/// A row whose status this version does not know (a newer jobctl wrote it, or the row is
/// damaged) is an error naming the job, in both stores: never read as a queued export job. A
/// kind is a name the queue keeps as it is (kinds are registered above the queue, decision
/// #97): a worker without that kind fails the job `database_corrupt`, naming the kind, instead
/// of running it as anything else.
@Suite("Stored values this version does not know")
struct StoredValueTests {
    @Test("SQLite: an unknown status is database_corrupt, naming the job; an unknown kind fails its job, naming it")
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

    @Test("PostgreSQL: an unknown status is database_corrupt, naming the job; an unknown kind fails its job, naming it")
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
        do {
            let read = try await store.job(job)
            Issue.record("read \(job) as \(String(describing: read?.status))")
        } catch let error as JobStoreError {
            #expect(error.code == .databaseCorrupt)
            #expect(error.message.contains("\(job)") && error.message.contains(value), "\(error.message)")
        }
        // The claim query does not select a row whose status it does not know; the other, of a
        // kind no worker of this version has, is claimed and fails, naming the kind, never
        // retried and never run as an export.
        let claimed = try await store.claim(
            as: WorkerIdentity(name: "w", host: "h", pid: 1, version: "t"),
            limit: 10,
            lease: .seconds(30)
        )
        #expect(claimed.map(\.job.id) == [other])
        let unknown = try #require(claimed.first)
        #expect(unknown.job.kind.rawValue == "transmogrify")
        let context = RunContext(
            lease: unknown.lease,
            inputRoot: nil,
            outputRoot: nil,
            stagingDirectory: NSTemporaryDirectory(),
            limits: .default,
            sender: HTTPSender(policy: AddressPolicy()),
            objectStore: S3ClientProvider { () throws(S3Error) in throw S3Error(.configuration, "no object store here")
            }
        )
        do {
            _ = try await JobKinds.prepare(unknown.job, context: context)
            Issue.record("prepared a job of kind transmogrify")
        } catch let error as JobError {
            #expect(error.code == .databaseCorrupt && error.retryable == false)
            #expect(error.message.contains("transmogrify") && error.message.contains("\(other)"), "\(error.message)")
        }
    }
}
