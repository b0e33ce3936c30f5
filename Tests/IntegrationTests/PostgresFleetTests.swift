import Foundation
import MediaTestKit
import Queue
import QueuePostgres
import Testing

/// A fleet on PostgreSQL (docs/spec.md §5): several worker processes on one database, some killed or
/// stopped midway; cancellation through NOTIFY.
@Suite("PostgreSQL fleet", .serialized, .timeLimit(.minutes(8)))
struct PostgresFleetTests {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    func jobs(_ url: String) async throws -> [Job] {
        try await PostgresJobStore.withStore(url: url) { try await $0.jobs(status: nil, limit: 1000) }
    }

    func deliveries(_ url: String) async throws -> [WebhookDelivery] {
        try await PostgresJobStore.withStore(url: url) { try await $0.deliveries(job: nil, limit: 1000) }
    }

    @Test func everyJobCompletesOnceThoughWorkersDie() async throws {
        let url = try await TestPostgres.shared.freshDatabase("fleet")
        let directory = try TemporaryDirectory("fleet")
        defer { directory.remove() }
        let receiver = try await Receiver(directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let input = try await Fixtures.shared.path(.long)
        for index in 0..<40 {
            let result = try await Jobctl.run([
                "submit", input, "--db", url, "--preset", "low", "--range", "\(index % 10)s+1.5s", "-o",
                directory.file("out-\(index).mp4"),
                "--webhook", receiver.url(), "--allow-private-webhooks",
            ])
            try #require(result.status == 0, "\(result.stderr)")
        }
        let environment = ["JOBCTL_WEBHOOK_SECRET": secret]
        func worker(_ name: String) throws -> JobctlProcess {
            try JobctlProcess(
                ["worker", "--db", url, "--name", name, "--lease", "3s", "--drain", "1s", "--allow-private-webhooks"],
                log: directory.file("\(name).log"),
                environment: environment
            )
        }
        let doomed = try worker("doomed")
        let leaving = try worker("leaving")
        let staying = try worker("staying")
        defer { staying.signal(SIGKILL) }

        // Midway: some jobs done, the doomed and leaving workers in the middle of one.
        #expect(
            try await eventually(within: .seconds(120)) {
                try await jobs(url).filter { $0.status == .completed }.count >= 8
            }
        )
        #expect(
            try await eventually(within: .seconds(60)) {
                let running = try await jobs(url).filter { $0.status == .reading }.compactMap(\.worker)
                return running.contains("doomed") && running.contains("leaving")
            }
        )
        doomed.signal(SIGKILL)
        leaving.signal(SIGTERM)
        #expect(try await leaving.waitForExit(timeout: .seconds(30))?.status == 0, "\(leaving.log)")
        #expect(leaving.log.contains("Worker draining"))

        let listing = try await Jobctl.run(["workers", "--db", url])
        #expect(
            listing.stdoutText.contains("leaving") && listing.stdoutText.contains("stopped"),
            "\(listing.stdoutText)"
        )
        #expect(listing.stdoutText.contains("doomed") && listing.stdoutText.contains("staying"))

        let finished = try await eventually(within: .seconds(240)) {
            try await jobs(url).allSatisfy { $0.status == .completed }
        }
        let unfinished = try await jobs(url).filter { $0.status != .completed }.map {
            "\($0.id) \($0.status) \($0.error?.description ?? "")"
        }
        #expect(finished, "\(unfinished)")
        #expect(
            try await eventually(within: .seconds(60)) {
                try await deliveries(url).allSatisfy { $0.status == .delivered }
            }
        )

        let all = try await jobs(url)
        let logs = [doomed, leaving, staying].map(\.log).joined()
        for job in all {
            #expect(job.status == .completed)
            #expect(
                logs.components(separatedBy: "job.id=\(job.id) job.output=").count - 1 == 1,
                "\(job.id) completed more than once"
            )
        }
        #expect(all.contains { $0.attempt == 2 }, "the killed worker's job ran again")
        let events = receiver.records()
        let byJob = Dictionary(grouping: events) { $0["jobId"] as? String ?? "" }
        #expect(byJob.count == 40)
        for (job, received) in byJob {
            #expect(Set(received.compactMap { $0["id"] as? String }).count == 1, "\(job): one webhook-id")
            #expect(received.allSatisfy { $0["valid"] as? Bool == true && $0["type"] as? String == "job.completed" })
        }
        let leftovers = directory.contents().filter { $0.hasSuffix(".tmp") }
        #expect(leftovers.isEmpty, "left behind: \(leftovers)")
        #expect(directory.contents().filter { $0.hasSuffix(".mp4") }.count == 40)
    }

    /// Submits a short job; the worker (polling every 30 s) must have started it within a second.
    func expectPickupWithinASecond(
        _ url: String,
        _ directory: TemporaryDirectory,
        _ worker: JobctlProcess,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let input = try await Fixtures.shared.path(.basic)
        let submitted = try await Jobctl.run([
            "submit", input, "--db", url, "--preset", "low", "--range", "0+1s", "-o", directory.file("o.mp4"),
        ])
        try #require(submitted.status == 0, sourceLocation: sourceLocation)
        #expect(
            try await eventually(within: .seconds(10)) { try await jobs(url).first?.status == .completed },
            "\(worker.log)",
            sourceLocation: sourceLocation
        )
        let job = try #require(try await jobs(url).first, sourceLocation: sourceLocation)
        let pickup = try #require(job.startedAt, sourceLocation: sourceLocation).timeIntervalSince(job.createdAt)
        #expect(pickup < 1, "picked up after \(pickup) s with a 30 s poll", sourceLocation: sourceLocation)
    }

    /// The server processes of `url`'s database whose last statement was a `LISTEN`: a
    /// worker's notification connection, open and waiting.
    static func listeners(_ url: String) async throws -> [String] {
        let sql =
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%' ORDER BY pid"
        let result = try await ProcessRunner.check("psql", [url, "-XAtq", "-c", sql])
        return result.stdoutText.split(separator: "\n").map(String.init)
    }

}

extension PostgresFleetTests {
    /// The tests of PostgresFleetTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("PostgreSQL fleet: timing", .serialized)
    struct Timing {
        let outer = PostgresFleetTests()

        /// An idle worker picks up a new job within milliseconds (NOTIFY), not at its next poll.
        @Test func idleWorkerWakesOnSubmit() async throws {
            let url = try await TestPostgres.shared.freshDatabase("wake")
            let directory = try TemporaryDirectory("wake")
            defer { directory.remove() }
            let worker = try JobctlProcess(["worker", "--db", url, "--poll", "30s"], log: directory.file("w.log"))
            defer { worker.signal(SIGKILL) }
            // Idle: its first claim found nothing and it listens (the signal, not a pause).
            let listening = try await eventually(within: .seconds(30)) {
                try await PostgresFleetTests.listeners(url).count == 1
            }
            try #require(listening, "the worker never listened")
            try await outer.expectPickupWithinASecond(url, directory, worker)
        }

        /// A lost notification connection (the server ends it) is logged, the worker polls once and
        /// listens again on a new connection: the next submit still wakes it within a second.
        @Test func aLostNotificationConnectionIsReopened() async throws {
            let url = try await TestPostgres.shared.freshDatabase("relisten")
            let directory = try TemporaryDirectory("relisten")
            defer { directory.remove() }
            func listeners() async throws -> [String] { try await PostgresFleetTests.listeners(url) }
            let worker = try JobctlProcess(["worker", "--db", url, "--poll", "30s"], log: directory.file("w.log"))
            defer { worker.signal(SIGKILL) }
            try #require(
                try await eventually(within: .seconds(10)) { try await listeners().count == 1 },
                "one listening connection per worker"
            )
            let first = try await listeners()
            let killed = try await ProcessRunner.check(
                "psql",
                [url, "-XAtq", "-c", "SELECT pg_terminate_backend(\(first.joined()))"]
            )
            #expect(killed.stdoutText.hasPrefix("t"))
            #expect(
                try await eventually(within: .seconds(10)) {
                    let now = try await listeners()
                    return now.count == 1 && now != first
                },
                "\(worker.log)"
            )
            #expect(worker.log.contains("polling until reconnected"), "\(worker.log)")
            #expect(worker.exited == nil)
            try await outer.expectPickupWithinASecond(url, directory, worker)
        }

        /// Cancellation reaches the worker through NOTIFY: its own polling is set to a minute.
        @Test func cancellationArrivesThroughNotify() async throws {
            let url = try await TestPostgres.shared.freshDatabase("notify")
            let directory = try TemporaryDirectory("notify")
            defer { directory.remove() }
            let input = try await Fixtures.shared.path(.long)
            let submitted = try await Jobctl.run([
                "submit", input, "--db", url, "--preset", "highest", "-o", directory.file("out.mp4"),
            ])
            try #require(submitted.status == 0, "\(submitted.stderr)")
            let id = JobID(submitted.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            let worker = try JobctlProcess(
                ["worker", "--db", url, "--cancel-poll", "60s", "--lease", "60s"],
                log: directory.file("w.log")
            )
            defer { worker.signal(SIGKILL) }
            #expect(
                try await eventually(within: .seconds(60)) {
                    try await outer.jobs(url).first?.status == .reading
                        && directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }
                }
            )
            let pickedUpAt = ContinuousClock.now
            let cancel = try await Jobctl.run(["cancel", id.rawValue, "--db", url])
            #expect(cancel.status == 0)
            let cancelled = try await eventually(within: .seconds(10)) {
                try await outer.jobs(url).first?.status == .cancelled
            }
            #expect(cancelled)
            #expect(ContinuousClock.now - pickedUpAt < .seconds(2), "took \(ContinuousClock.now - pickedUpAt)")
            #expect(directory.contents().allSatisfy { !$0.hasSuffix(".tmp") && $0 != "out.mp4" })
        }
    }
}
