import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// A worker that lost its lease never uploads or renames (docs/spec.md §4, §5). Worker A is frozen
/// (SIGSTOP, as a debugger or an overloaded host would) just before its PUT, mid-PUT, or just
/// before its rename; its 2 s lease runs out; worker B takes the job over and completes it;
/// then A is resumed. The media server logs which attempt sent each PUT (`Jobctl-Attempt`).
@Suite("Fencing a frozen worker", .serialized, .timeLimit(.minutes(6)))
struct FencingTests {
    typealias Setup = RemoteMediaTests.Setup

    /// Whether `pid` is stopped (state `T` in /proc).
    static func isStopped(_ pid: Int32) -> Bool { processIsStopped(pid) }

    static func worker(_ setup: Setup, _ name: String, failpoints: String? = nil, once: Bool) throws -> JobctlProcess {
        try JobctlProcess(
            [
                "worker", "--db", setup.db, "--name", name, "--lease", "2s", "--staging-dir",
                setup.staging + "/" + name, "--allow-private-webhooks",
            ]
                + (once ? ["--once"] : []),
            log: setup.directory.file("\(name).log"),
            environment: failpoints.map { ["JOBCTL_FAILPOINTS": $0] } ?? [:]
        )
    }

    /// Runs B until it has completed `id` as attempt 2, then stops it.
    static func takeOver(_ setup: Setup, _ id: JobID, name: String) async throws -> Job {
        let b = try worker(setup, name, once: false)
        let done = try await eventually(within: .seconds(90)) { try await setup.job(id).status.isTerminal }
        b.signal(SIGTERM)
        try await b.waitForExit(timeout: .seconds(30))
        try #require(done, "B did not finish the job: \(b.log)")
        return try await setup.job(id)
    }

    @Test func aWorkerFrozenBeforeItsPUTNeverUploadsAfterTheNewOwner() async throws {
        let setup = try await Setup("fence-put")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.basic)
        for round in 0..<10 {
            let path = "/out/r\(round).mp4"
            let id = try await setup.submit(input, ["--range", "0+1s", "-o", setup.server.url(path)])
            let a = try Self.worker(setup, "A\(round)", failpoints: "before-upload", once: true)
            try #require(
                try await eventually(within: .seconds(60)) { Self.isStopped(a.pid) },
                "A never reached its upload: \(a.log)"
            )

            let job = try await Self.takeOver(setup, id, name: "B\(round)")
            #expect(
                job.status == .completed && job.attempt == 2 && job.worker == "B\(round)",
                "round \(round): \(job.status) \(job.error?.message ?? "")"
            )
            kill(a.pid, SIGCONT)
            #expect(try await a.waitForExit(timeout: .seconds(30))?.status == 0, "\(a.log)")

            let puts = setup.server.records().filter { $0["path"] as? String == path }
            #expect(
                !puts.contains { $0["attempt"] as? String == "1" },
                "round \(round): the stale worker sent a PUT: \(puts)"
            )
            #expect(
                puts.filter { $0["method"] as? String == "PUT" }.map { $0["status"] as? Int } == [200],
                "round \(round): \(puts)"
            )
            #expect(a.log.contains("Lease lost before uploading"), "round \(round): \(a.log)")
            let stored = (try FileManager.default.attributesOfItem(atPath: setup.uploads + path)[.size] as? NSNumber)?
                .intValue
            #expect(stored == job.result?["bytes"]?.doubleValue.map(Int.init), "round \(round): the stored file is B's")
        }
    }

    /// Frozen while its body is on the wire: on resuming it stops sending within a second (its
    /// lease's local deadline has passed; the test allows scheduling slack), so the server never
    /// gets A's complete body.
    @Test func aWorkerFrozenMidPUTAbortsItWhenResumed() async throws {
        // 30 MB read at 4 MB/s: far more than the socket buffers hold, so A cannot have sent it all.
        let setup = try await Setup("fence-mid-put", ["--put-rate", "4000000"])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.long)
        let path = "/out/long.mp4"
        let id = try await setup.submit(input, ["--preset", "passthrough", "-o", setup.server.url(path)])
        let a = try Self.worker(setup, "A", once: true)
        try #require(
            try await eventually(within: .seconds(90)) {
                setup.server.records().contains {
                    $0["method"] as? String == "PUT-START" && $0["attempt"] as? String == "1"
                }
            },
            "A never started its PUT: \(a.log)"
        )
        a.signal(SIGSTOP)

        let job = try await Self.takeOver(setup, id, name: "B")
        #expect(job.status == .completed && job.attempt == 2, "\(job.status) \(job.error?.message ?? "")")
        let resumed = Date().timeIntervalSince1970
        kill(a.pid, SIGCONT)
        #expect(try await a.waitForExit(timeout: .seconds(30))?.status == 0, "\(a.log)")
        let ended = try #require(
            try await eventually(within: .seconds(10)) {
                setup.server.records().contains { $0["method"] as? String == "PUT" && $0["attempt"] as? String == "1" }
            }
                ? setup.server.records().first { $0["method"] as? String == "PUT" && $0["attempt"] as? String == "1" }
                : nil,
            "the server never saw A's PUT end"
        )
        #expect(
            ended["status"] as? Int == 400 && (ended["bytes"] as? Int ?? 0) < (ended["declared"] as? Int ?? 0),
            "A's body was complete: \(ended)"
        )
        // Within a second of resuming, plus scheduling slack on a busy 2-core machine.
        #expect(
            (ended["at"] as? Double ?? .infinity) - resumed < 2.5,
            "A stopped sending \((ended["at"] as? Double ?? .infinity) - resumed) s after resuming"
        )
        #expect(a.log.contains("Lease lost during the upload"), "\(a.log)")
        let stored = (try FileManager.default.attributesOfItem(atPath: setup.uploads + path)[.size] as? NSNumber)?
            .intValue
        #expect(stored == job.result?["bytes"]?.doubleValue.map(Int.init), "the stored file is B's")
        #expect(
            !setup.server.records().contains {
                $0["method"] as? String == "PUT" && $0["attempt"] as? String == "1" && $0["status"] as? Int == 200
            }
        )
    }

    /// The local rename is fenced the same way: B's output stays.
    @Test func aWorkerFrozenBeforeItsRenameLeavesTheNewOwnersOutput() async throws {
        let setup = try await Setup("fence-rename")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.basic)
        let output = setup.directory.file("out.mp4")
        let id = try await setup.submit(input, ["--range", "0+1s", "-o", output])
        let a = try Self.worker(setup, "A", failpoints: "before-rename", once: true)
        try #require(
            try await eventually(within: .seconds(60)) { Self.isStopped(a.pid) },
            "A never reached its rename: \(a.log)"
        )
        let job = try await Self.takeOver(setup, id, name: "B")
        #expect(job.status == .completed && job.attempt == 2)
        var before = stat()
        #expect(stat(output, &before) == 0)
        kill(a.pid, SIGCONT)
        #expect(try await a.waitForExit(timeout: .seconds(30))?.status == 0, "\(a.log)")
        var after = stat()
        #expect(
            stat(output, &after) == 0 && after.st_ino == before.st_ino
                && after.st_mtim.tv_nsec == before.st_mtim.tv_nsec,
            "A replaced B's output"
        )
        #expect(a.log.contains("Lease lost before committing"), "\(a.log)")
        #expect(!setup.directory.contents().contains { $0.hasSuffix(".jobctl.tmp") }, "\(setup.directory.contents())")
    }
}
