import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// Real worker processes on a real SQLite file (docs/spec.md §5): several workers sharing dozens of
/// jobs, a worker killed with SIGKILL, cancellation, graceful shutdown, bad inputs, retries.
@Suite("Worker processes", .serialized, .timeLimit(.minutes(5)))
struct WorkerProcessTests {
    /// A database and an output directory for one test.
    struct Queue: Sendable {
        let directory: TemporaryDirectory
        let store: SQLiteJobStore
        var db: String { directory.file("jobs.sqlite") }

        init(_ label: String) throws {
            directory = try TemporaryDirectory(label)
            store = try SQLiteJobStore(path: directory.file("jobs.sqlite"))
        }

        /// `jobctl submit … --db DB`, returning the id.
        func submit(_ input: String, _ arguments: [String]) async throws -> JobID {
            let result = try await Jobctl.run(["submit", input, "--db", db] + arguments)
            try #require(result.status == 0, "submit failed: \(result.stderr)")
            return JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        func worker(_ name: String, _ arguments: [String] = []) throws -> JobctlProcess {
            try JobctlProcess(["worker", "--db", db, "--name", name] + arguments, log: directory.file("\(name).log"))
        }

        func job(_ id: JobID) async throws -> Job { try #require(try await store.job(id)) }

        /// Waits until the job runs and its export has started writing (its temporary file exists).
        func waitUntilExporting(_ id: JobID) async throws -> Bool {
            try await eventually(within: .seconds(60)) {
                try await job(id).status == .reading && outputs().contains { $0.hasSuffix(".jobctl.tmp") }
            }
        }

        /// Files in the output directory that are not the database or logs.
        func outputs() -> [String] {
            directory.contents().filter { !$0.hasPrefix("jobs.sqlite") && !$0.hasSuffix(".log") }
        }
    }

    @Test func severalWorkersRunEveryJobExactlyOnce() async throws {
        let queue = try Queue("fleet")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        var ids: [JobID] = []
        for index in 0..<24 {
            ids.append(
                try await queue.submit(
                    input,
                    [
                        "--preset", index % 3 == 0 ? "m4a" : "low", "--range", "0.5s+1s", "-o",
                        queue.directory.file("out-\(index).\(index % 3 == 0 ? "m4a" : "mp4")"),
                    ]
                )
            )
        }
        let workers = try (0..<3).map { try queue.worker("w\($0)", ["--concurrency", "2", "--once"]) }
        for worker in workers {
            let exit = try await worker.waitForExit(timeout: .seconds(120))
            #expect(exit?.status == 0, "\(worker.log)")
        }
        let logs = workers.map(\.log).joined()
        for (index, id) in ids.enumerated() {
            let job = try await queue.job(id)
            #expect(job.status == .completed, "\(id): \(job.status) \(job.error?.description ?? "")")
            #expect(job.attempt == 1, "\(id) ran \(job.attempt) times")
            let lines = logs.split(separator: "\n").filter { $0.contains("job.id=\(id)") }
            #expect(
                lines.filter { $0.contains("Job claimed") }.count == 1
                    && lines.filter { $0.contains("Job completed") }.count == 1,
                "\(id): claimed and completed once in the logs: \(lines)"
            )
            if index % 6 == 0 {
                #expect(try await FFProbe.decodeErrors(job.output) == "")
            }
        }
        #expect(Set(workers.map { $0.log.contains("Job completed") }) == [true], "every worker did some work")
        #expect(!queue.outputs().contains { $0.hasSuffix(".tmp") })
    }

    @Test func killedWorkersJobIsTakenOverAfterItsLease() async throws {
        let queue = try Queue("sigkill")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.long)
        let output = queue.directory.file("out.mp4")
        let id = try await queue.submit(input, ["--preset", "highest", "-o", output])
        let first = try queue.worker("doomed", ["--lease", "2s"])
        #expect(try await queue.waitUntilExporting(id))
        first.signal(SIGKILL)
        try await first.waitForExit(timeout: .seconds(5))
        #expect(try await queue.job(id).status == .reading, "the job still looks taken until its lease expires")

        // Started while the dead worker's lease still holds: it takes the job once the lease expires.
        let second = try queue.worker("rescuer", ["--lease", "2s"])
        #expect(
            try await eventually(within: .seconds(120)) { try await queue.job(id).status.isTerminal },
            "\(second.log)"
        )
        second.signal(SIGTERM)
        #expect(try await second.waitForExit(timeout: .seconds(10))?.status == 0)
        let job = try await queue.job(id)
        #expect(
            job.status == .completed && job.attempt == 2 && job.worker == "rescuer",
            "\(job.status) attempt \(job.attempt) \(job.worker ?? "")"
        )
        #expect(queue.outputs() == ["out.mp4"], "left behind: \(queue.outputs())")
        #expect(try await FFProbe.decodeErrors(output) == "")
    }

    /// A job that kills every worker that claims it (here: SIGKILL mid-export, as a decoder
    /// crash or the OOM killer would) is set aside after 3 crashes in a row, though it asked for
    /// 100 attempts: a fourth worker never runs it, `retry` refuses it, `retry --force` queues it.
    @Test func aJobThatKillsItsWorkersIsSetAsideAfterThree() async throws {
        let queue = try Queue("poison")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.long)
        let id = try await queue.submit(
            input,
            ["--preset", "highest", "--max-attempts", "100", "-o", queue.directory.file("out.mp4")]
        )
        for crash in 1...JobStateMachine.crashLimit {
            let worker = try queue.worker("victim-\(crash)", ["--lease", "2s"])
            #expect(
                try await eventually(within: .seconds(60)) {
                    let job = try await queue.job(id)
                    return job.attempt == crash && job.status == .reading && worker.log.contains("Job claimed")
                },
                "attempt \(crash): \(worker.log)"
            )
            #expect(try await queue.waitUntilExporting(id))
            worker.signal(SIGKILL)
            try await worker.waitForExit(timeout: .seconds(5))
        }
        let survivor = try queue.worker("survivor", ["--lease", "2s"])
        #expect(try await eventually(within: .seconds(30)) { try await queue.job(id).status == .failed })
        let job = try await queue.job(id)
        #expect(job.error?.code == .workerCrashed && job.error?.retryable == false, "\(job.error?.description ?? "")")
        #expect(job.attempt == JobStateMachine.crashLimit && job.maxAttempts == 100)
        #expect(!survivor.log.contains("Job claimed"), "a fourth worker ran the poison job: \(survivor.log)")
        survivor.signal(SIGTERM)
        _ = try await survivor.waitForExit(timeout: .seconds(10))

        let refused = try await Jobctl.run(["retry", id.rawValue, "--db", queue.db])
        #expect(refused.status != 0 && refused.stderr.contains("--force"), "\(refused.stderr)")
        #expect(try await queue.job(id).status == .failed)
        let forced = try await Jobctl.run(["retry", "--force", id.rawValue, "--db", queue.db])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try await queue.job(id).status == .unknown)
    }

    @Test func sigtermDrainsThenHandsBackWhatIsStillRunning() async throws {
        let queue = try Queue("sigterm")
        defer { queue.directory.remove() }
        let long = try await Fixtures.shared.path(.long)
        let id = try await queue.submit(long, ["--preset", "highest", "-o", queue.directory.file("long.mp4")])
        let worker = try queue.worker("leaving", ["--drain", "1s"])
        #expect(try await queue.waitUntilExporting(id))
        let signalledAt = ContinuousClock.now
        worker.signal(SIGTERM)
        let exit = try #require(try await worker.waitForExit(timeout: .seconds(15)))
        #expect(exit.status == 0, "\(worker.log)")
        #expect(exit.at - signalledAt < .seconds(4), "took \(exit.at - signalledAt) with a 1 s drain")
        #expect(worker.log.contains("Worker draining") && worker.log.contains("Job handed back"))
        let handedBack = try await queue.job(id)
        #expect(
            handedBack.status == .unknown && handedBack.attempt == 0,
            "\(handedBack.status) attempt \(handedBack.attempt)"
        )
        #expect(queue.outputs().isEmpty, "left: \(queue.outputs())")

        let next = try queue.worker("next", ["--once"])
        #expect(try await next.waitForExit(timeout: .seconds(120))?.status == 0)
        let finished = try await queue.job(id)
        #expect(finished.status == .completed && finished.worker == "next" && finished.attempt == 1)
    }

    @Test func sigtermLetsAShortJobFinish() async throws {
        let queue = try Queue("drain")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.long)
        let id = try await queue.submit(
            input,
            ["--preset", "low", "--range", "0+6s", "-o", queue.directory.file("short.mp4")]
        )
        let worker = try queue.worker("w", ["--drain", "60s"])
        #expect(try await eventually(within: .seconds(30)) { try await queue.job(id).status == .reading })
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0)
        #expect(try await queue.job(id).status == .completed)
    }

    @Test func badInputsFailWithTheirCodeAndAreNotRetried() async throws {
        let queue = try Queue("bad")
        defer { queue.directory.remove() }
        let missing = try await queue.submit(queue.directory.file("missing.mov"), ["--preset", "low"])
        let text = try await queue.submit(
            try await Fixtures.shared.path(.notMedia),
            ["--preset", "low", "-o", queue.directory.file("text.mp4")]
        )
        let range = try await queue.submit(
            try await Fixtures.shared.path(.basic),
            ["--preset", "low", "--range", "9s+1s", "-o", queue.directory.file("range.mp4")]
        )
        let good = try await queue.submit(
            try await Fixtures.shared.path(.basic),
            ["--preset", "low", "-o", queue.directory.file("good.mp4")]
        )
        let worker = try queue.worker("w", ["--once"])
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")
        for (id, code) in [(missing, "input_not_found"), (text, "input_unreadable"), (range, "range_out_of_bounds")] {
            let job = try await queue.job(id)
            #expect(
                job.status == .failed && job.error?.code.rawValue == code && job.error?.retryable == false
                    && job.attempt == 1,
                "\(job.error?.description ?? "no error")"
            )
        }
        #expect(try await queue.job(good).status == .completed)
        #expect(queue.outputs() == ["good.mp4"])
        let wait = try await Jobctl.run(["wait", missing.rawValue, "--db", queue.db])
        #expect(wait.status == 1 && wait.stderr.contains("input_not_found"))
    }

    /// A destination that became a FIFO (or the input itself) after submit: the job fails with
    /// output_forbidden, is not retried, and the FIFO is still a FIFO.
    @Test func aWorkerNeverReplacesWhatIsNotARegularFile() async throws {
        let queue = try Queue("forbidden-output")
        defer { queue.directory.remove() }
        let input = queue.directory.file("in.mp4")
        try FileManager.default.copyItem(atPath: try await Fixtures.shared.path(.basic), toPath: input)
        let fifo = queue.directory.file("pipe.mp4")
        let piped = try await queue.submit(input, ["--preset", "low", "--range", "0+1s", "-o", fifo])
        #expect(mkfifo(fifo, 0o644) == 0)
        let alias = queue.directory.file("alias.mp4")
        let itself = try await queue.submit(input, ["--preset", "low", "--range", "0+1s", "-o", alias])
        #expect(link(input, alias) == 0, "the output is now a hard link of the input")
        let before = try Data(contentsOf: URL(fileURLWithPath: input))
        let worker = try queue.worker("w", ["--once", "--retry-delay", "100ms"])
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")
        for (id, says) in [(piped, "FIFO"), (itself, "is the input itself")] {
            let job = try await queue.job(id)
            #expect(
                job.status == .failed && job.error?.code == .outputForbidden && job.error?.retryable == false
                    && job.attempt == 1,
                "\(job.error?.description ?? "no error")"
            )
            #expect(job.error?.message.contains(says) == true, "\(job.error?.message ?? "")")
        }
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == before)
        #expect(!queue.outputs().contains { $0.hasSuffix(".jobctl.tmp") }, "\(queue.outputs())")
    }

    /// A job over a limit fails at once with limit_exceeded and is not retried: another
    /// attempt would meet the same limit.
    @Test func jobsOverALimitFailWithoutRetrying() async throws {
        let queue = try Queue("limits")
        defer { queue.directory.remove() }
        let huge = try await queue.submit(
            try await Fixtures.shared.path(.hugePicture),
            ["--preset", "highest", "-o", queue.directory.file("huge.mp4")]
        )
        let late = try await queue.submit(
            try await Fixtures.shared.path(.lateAudio),
            ["--preset", "low", "-o", queue.directory.file("late.mp4")]
        )
        let long = try await queue.submit(
            try await Fixtures.shared.path(.basic),
            ["--preset", "low", "-o", queue.directory.file("long.mp4")]
        )
        let worker = try queue.worker("w", ["--once", "--retry-delay", "100ms", "--max-duration", "3s"])
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")
        for (id, code, says) in [
            (huge, "limit_exceeded", "8192x8192"), (late, "limit_exceeded", "lasts 3600"),
            (long, "limit_exceeded", "over the limit of 3s"),
        ] {
            let job = try await queue.job(id)
            #expect(
                job.status == .failed && job.error?.code.rawValue == code && job.error?.retryable == false
                    && job.attempt == 1,
                "\(job.error?.description ?? "no error")"
            )
            #expect(job.error?.message.contains(says) == true, "\(job.error?.message ?? "")")
        }
        #expect(queue.outputs().isEmpty, "\(queue.outputs())")
    }

    @Test func retryableFailuresBackOffThenFail() async throws {
        let queue = try Queue("retry")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        let id = try await queue.submit(
            input,
            ["--preset", "low", "--max-attempts", "3", "-o", queue.directory.file("missing/out.mp4")]
        )
        let worker = try queue.worker("w", ["--retry-delay", "300ms"])
        #expect(try await eventually(within: .seconds(30)) { try await queue.job(id).status == .failed })
        let job = try await queue.job(id)
        #expect(job.attempt == 3 && job.error?.code == .outputUnwritable && job.error?.retryable == true)
        let attempts = worker.log.components(separatedBy: "Job claimed").count - 1
        #expect(attempts == 3)
        // `retry` runs it again once the directory exists.
        try FileManager.default.createDirectory(
            atPath: queue.directory.file("missing"),
            withIntermediateDirectories: true
        )
        let retried = try await Jobctl.run(["retry", id.rawValue, "--db", queue.db])
        #expect(
            retried.status == 0 && retried.stdoutText.contains("attempt 4 of 6"),
            "\(retried.stdoutText)\(retried.stderr)"
        )
        #expect(try await eventually(within: .seconds(30)) { try await queue.job(id).status == .completed })
        worker.signal(SIGTERM)
        try await worker.waitForExit(timeout: .seconds(10))
    }

    @Test func submitOptionsAndWaitExitCodes() async throws {
        let queue = try Queue("submit")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        let first = try await queue.submit(
            input,
            ["--preset", "low", "--idempotency-key", "upload-77", "--metadata", "user=42", "--priority", "5"]
        )
        let again = try await Jobctl.run([
            "submit", input, "--db", queue.db, "--preset", "medium", "--idempotency-key", "upload-77", "--json",
        ])
        let json = try #require(try Jobctl.json(again) as? [String: Any])
        #expect(json["id"] as? String == first.rawValue && json["preset"] as? String == "low")
        #expect((json["metadata"] as? [String: String]) == ["user": "42"] && json["priority"] as? Int == 5)
        for key in [
            "id", "kind", "status", "input", "output", "preset", "format", "range", "priority", "attempt",
            "maxAttempts", "progress",
            "tracks", "result", "error", "webhook", "metadata", "worker", "createdAt", "startedAt", "finishedAt",
        ] {
            #expect(json.keys.contains(key), "job JSON lacks \(key)")
        }
        // The default output: beside the input, NAME.PRESET.EXT.
        #expect(json["output"] as? String == (input as NSString).deletingPathExtension + ".low.mp4")

        let timedOut = try await Jobctl.run(["wait", first.rawValue, "--db", queue.db, "--timeout", "300ms"])
        #expect(timedOut.status == 4)
        let queued = try await queue.submit(input, ["--preset", "low", "-o", queue.directory.file("x.mp4")])
        #expect(try await Jobctl.run(["cancel", queued.rawValue, "--db", queue.db]).stdoutText.contains("cancelled"))
        #expect(try await Jobctl.run(["wait", queued.rawValue, "--db", queue.db]).status == 3)

        let worker = try queue.worker("w")
        defer { worker.signal(SIGKILL) }
        let waited = try await Jobctl.run([
            "submit", input, "--db", queue.db, "--preset", "low", "--range", "0+1s", "-o",
            queue.directory.file("w.mp4"), "--wait", "--timeout", "60s",
        ])
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(waited.stdoutText.contains("completed"))

        for bad in [
            ["--preset", "nope"], ["--preset", "low", "--range", "5-1"], ["--preset", "low", "--webhook", "ftp://x"],
            ["--preset", "low", "--metadata", "novalue"],
        ] {
            let result = try await Jobctl.run(["submit", input, "--db", queue.db] + bad)
            #expect(result.status == 64, "\(bad): \(result.status) \(result.stderr)")
        }
        let list = try await Jobctl.run(["list", "--db", queue.db, "--status", "cancelled", "--json"])
        #expect((try Jobctl.json(list) as? [[String: Any]])?.count == 1)
    }

    /// `watch` draws progress bars on a terminal (`script` gives it one) and prints plain lines
    /// otherwise.
    @Test func watchShowsRunningJobs() async throws {
        let queue = try Queue("watch")
        defer { queue.directory.remove() }
        let input = try await Fixtures.shared.path(.long)
        let id = try await queue.submit(input, ["--preset", "highest", "-o", queue.directory.file("out.mp4")])
        let worker = try queue.worker("w")
        defer { worker.signal(SIGKILL) }
        #expect(try await queue.waitUntilExporting(id))
        #expect(try await eventually(within: .seconds(10)) { try await queue.job(id).progress > 0 })

        // `watch` runs until it is stopped: each is read from the file it writes until it has
        // shown what is expected (a start-up slowed by a loaded machine only waits longer).
        func shown(_ file: String) -> String { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }
        let plainFile = queue.directory.file("watch.txt")
        let plain = try ChildProcess(
            "sh",
            ["-c", "exec \"$0\" watch --db \"$1\" > \"$2\"", Jobctl.path, queue.db, plainFile]
        )
        defer { plain.signal(SIGKILL) }
        let line = await eventually(within: .seconds(60)) { shown(plainFile).contains("\(id)  reading") }
        #expect(line, "\(shown(plainFile))")
        plain.signal(SIGKILL)
        // On a terminal (`script` gives it one, and writes what it shows to the file).
        let screenFile = queue.directory.file("screen.txt")
        let screen = try ChildProcess("script", ["-qfec", "'\(Jobctl.path)' watch --db '\(queue.db)'", screenFile])
        defer { screen.signal(SIGKILL) }
        let drawn = await eventually(within: .seconds(60)) {
            let text = shown(screenFile)
            return text.contains("1 running, 0 queued") && text.contains("\(id)  [") && text.contains("%")
        }
        #expect(drawn, "\(shown(screenFile))")
    }
}

extension WorkerProcessTests {
    /// The tests of WorkerProcessTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Worker processes: timing", .serialized)
    struct Timing {
        @Test func cancellingARunningJobStopsItWithinTwoSeconds() async throws {
            let queue = try Queue("cancel")
            defer { queue.directory.remove() }
            let input = try await Fixtures.shared.path(.long)
            let id = try await queue.submit(input, ["--preset", "highest", "-o", queue.directory.file("out.mp4")])
            let worker = try queue.worker("w")
            #expect(try await queue.waitUntilExporting(id))
            #expect(
                try await eventually(within: .seconds(10)) { try await queue.job(id).progress > 0 },
                "progress is stored while the job runs"
            )
            let cancelledAt = ContinuousClock.now
            let cancel = try await Jobctl.run(["cancel", id.rawValue, "--db", queue.db])
            #expect(
                cancel.status == 0 && cancel.stdoutText.contains("cancellation requested"),
                "\(cancel.stdoutText)\(cancel.stderr)"
            )
            #expect(try await eventually(within: .seconds(10)) { try await queue.job(id).status == .cancelled })
            #expect(
                ContinuousClock.now - cancelledAt < .seconds(2),
                "cancelled after \(ContinuousClock.now - cancelledAt)"
            )
            #expect(queue.outputs().isEmpty, "left: \(queue.outputs())")
            let wait = try await Jobctl.run(["wait", id.rawValue, "--db", queue.db])
            #expect(wait.status == 3)
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit(timeout: .seconds(10))?.status == 0)
        }
    }
}
