import Foundation
import Logging
import Media
import MediaTestKit
import ObjectStorage
import Queue
import Synchronization
import Testing
import Worker

/// The worker in this process against `MemoryJobStore`: the claim loop, settling, retries,
/// cancellation, drain and a lost lease, with real FFmpeg on tiny clips and no database or
/// child process, so each runs in about a second. The same behaviours are tested again with
/// real worker processes on real databases in `IntegrationTests`.
@Suite("Worker in process", .timeLimit(.minutes(2)))
struct WorkerInProcessTests {
    /// A queue in memory, an output directory, and a worker over both.
    struct Bench: Sendable {
        let store: MemoryJobStore
        let directory: TemporaryDirectory

        init(_ label: String, clock: @escaping @Sendable () -> Date = { Date() }) throws {
            store = MemoryJobStore(clock: clock)
            directory = try TemporaryDirectory("worker-in-process-\(label)")
        }

        func submit(
            _ input: String,
            range: Job.Range? = nil,
            output name: String = "out.mp4",
            maxAttempts: Int = 3
        ) async throws -> Job {
            let preset = try PresetCatalog.builtIn.preset(named: "low")
            let settings = try JSONValue(encoding: preset)
            let request = JobRequest(
                input: input,
                output: directory.file(name),
                preset: "low",
                presetSettings: settings,
                format: "mp4",
                range: range,
                maxAttempts: maxAttempts
            )
            return try await store.submit(request).job
        }

        /// These workers have no object store: a job that needs one fails with this.
        static let noObjectStore = S3ClientProvider { () throws(S3Error) in
            throw S3Error(.configuration, "no object store in the in-process tests")
        }

        func worker(
            once: Bool = false,
            lease: Duration = .seconds(30),
            drain: Duration = .seconds(30),
            objectStore: S3ClientProvider = Bench.noObjectStore
        ) -> Worker {
            let options = WorkerOptions(
                name: "in-process",
                lease: lease,
                drain: drain,
                once: once,
                pollInterval: .milliseconds(20),
                cancellationCheckInterval: .milliseconds(100),
                retryPolicy: RetryPolicy(base: .milliseconds(1), maximum: .milliseconds(1), jitter: 0),
                stagingDirectory: directory.file("staging"),
                uploadRetryDelays: [],
                objectStore: objectStore
            )
            let identity = WorkerIdentity(name: "in-process", host: "localhost", pid: getpid(), version: "test")
            return Worker(
                store: store,
                options: options,
                identity: identity,
                logger: Logger(label: "worker-in-process")
            )
        }

        func job(_ id: JobID) async throws -> Job { try #require(try await store.job(id)) }

        /// Files in the output directory (the staging directory aside).
        func outputs() -> [String] { directory.contents().filter { $0 != "staging" } }
    }

    @Test("a job runs to completion: completed, progress 1, the output a 1 s clip by ffprobe")
    func completes() async throws {
        let bench = try Bench("complete")
        defer { bench.directory.remove() }
        let job = try await bench.submit(
            try await Fixtures.shared.path(.basic),
            range: Job.Range(start: 0.5, duration: 1)
        )
        try await bench.worker(once: true).run()

        let done = try await bench.job(job.id)
        #expect(done.status == .completed, "\(String(describing: done.error))")
        #expect(done.attempt == 1)
        #expect(done.progress == 1)
        #expect(bench.outputs() == ["out.mp4"])
        let probe = try await FFProbe.probe(bench.directory.file("out.mp4"))
        let duration = try #require(probe.format.durationSeconds)
        #expect(abs(duration - 1) < 0.1, "duration \(duration)")
    }

    @Test("an input that does not exist fails at once, not retried, and writes nothing")
    func nonRetryableFailure() async throws {
        let bench = try Bench("missing")
        defer { bench.directory.remove() }
        let job = try await bench.submit(bench.directory.file("nowhere.mov"))
        try await bench.worker(once: true).run()

        let failed = try await bench.job(job.id)
        #expect(failed.status == .failed)
        #expect(failed.error?.code == .inputNotFound)
        #expect(failed.attempt == 1)
        #expect(bench.outputs() == [])
    }

    @Test("a stored range that makes no range (under a microsecond, negative) fails its job; the worker goes on")
    func impossibleStoredRanges() async throws {
        let bench = try Bench("bad-range")
        defer { bench.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        // Written by an older API or by hand: 5e-324 s rounds to 0 µs, where TimeRange traps.
        let tiny = try await bench.submit(input, range: Job.Range(start: 1.5, duration: 5e-324))
        let negative = try await bench.submit(input, range: Job.Range(start: -1, duration: 1))
        let fine = try await bench.submit(input, range: Job.Range(start: 0, duration: 0.5))
        try await bench.worker(once: true).run()
        for id in [tiny.id, negative.id] {
            let failed = try await bench.job(id)
            #expect(failed.status == .failed)
            #expect(failed.error?.code == .rangeOutOfBounds, "\(String(describing: failed.error))")
        }
        #expect(try await bench.job(fine.id).status == .completed, "the worker went on to the next job")
    }

    @Test("stored options that do not read as the kind's are database_corrupt naming the job, not a default")
    func unreadableStoredOptions() async throws {
        let bench = try Bench("bad-options")
        defer { bench.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        // Rows changed by hand or by another version: a preset whose fields have the wrong
        // types, thumbnail options that are not an object.
        var badRequests = [
            JobRequest(
                input: input,
                output: bench.directory.file("bad.mp4"),
                preset: "low",
                presetSettings: .object(["name": .number(5), "video": .string("fast")])
            ),
            JobRequest(kind: .thumbnails, input: input, output: bench.directory.file("thumbs"), preset: "thumbnails"),
        ]
        badRequests[1].presetSettings = .string("every second")
        var bad: [Job] = []
        for request in badRequests { bad.append(try await bench.store.submit(request).job) }
        let fine = try await bench.submit(input, range: Job.Range(start: 0, duration: 0.5))
        try await bench.worker(once: true).run()
        for job in bad {
            let failed = try await bench.job(job.id)
            #expect(failed.status == .failed)
            #expect(failed.error?.code == .databaseCorrupt, "\(String(describing: failed.error))")
            #expect(failed.error?.message.contains("job \(job.id)") == true)
            #expect(failed.error?.retryable == false)
            #expect(failed.attempt == 1, "not retried: another attempt reads the same row")
        }
        #expect(try await bench.job(fine.id).status == .completed, "the worker went on to the next job")
        #expect(bench.outputs() == ["out.mp4"], "nothing written for the unreadable rows")
    }

    @Test("a retryable failure runs again until its attempts are spent")
    func retriesUntilExhausted() async throws {
        let bench = try Bench("retry")
        defer { bench.directory.remove() }
        // The output's directory does not exist: output_unwritable, retryable.
        let job = try await bench.submit(
            try await Fixtures.shared.path(.tiny),
            output: "missing/out.mp4",
            maxAttempts: 2
        )
        let worker = bench.worker()
        let run = Task { try await worker.run() }
        #expect(try await eventually(within: .seconds(30)) { try await bench.job(job.id).status.isTerminal })
        worker.requestStop()
        try await run.value

        let failed = try await bench.job(job.id)
        #expect(failed.status == .failed)
        #expect(failed.error?.code == .outputUnwritable)
        #expect(failed.error?.retryable == true)
        #expect(failed.attempt == 2, "both attempts ran")
    }

    @Test("a stop with no drain time hands the running job back, its attempt not counted")
    func drainHandsBack() async throws {
        let bench = try Bench("drain")
        defer { bench.directory.remove() }
        let job = try await bench.submit(try await Fixtures.shared.path(.long))
        let worker = bench.worker(drain: .zero)
        let run = Task { try await worker.run() }
        #expect(try await eventually(within: .seconds(30)) { try await bench.job(job.id).status == .reading })

        worker.requestStop()
        try await run.value
        let back = try await bench.job(job.id)
        #expect(back.status == .unknown)
        #expect(back.attempt == 0)
        #expect(back.worker == "in-process")
        #expect(bench.outputs() == [])
        let workers = try await bench.store.workers()
        #expect(workers.map(\.name) == ["in-process"])
        #expect(workers.first?.stoppedAt != nil)
    }

    @Test("a worker whose lease was taken over abandons the attempt and touches nothing")
    func lostLease() async throws {
        // The store's clock runs an hour ahead once the test says so: the worker's lease is
        // then long expired in the store's eyes, and another worker takes the job over.
        let offset = Offset()
        let bench = try Bench("lease") { Date().addingTimeInterval(offset.seconds) }
        defer { bench.directory.remove() }
        let job = try await bench.submit(try await Fixtures.shared.path(.long))
        let worker = bench.worker(lease: .seconds(3))
        let run = Task { try await worker.run() }
        #expect(try await eventually(within: .seconds(30)) { try await bench.job(job.id).status == .reading })

        offset.seconds = 3600
        let other = WorkerIdentity(name: "other", host: "elsewhere", pid: 1, version: "test")
        let taken = try await bench.store.claim(as: other, limit: 1, lease: .seconds(7200))
        #expect(taken.map(\.job.id) == [job.id])
        #expect(
            try await eventually(within: .seconds(10)) { worker.state.running == 0 },
            "the worker let go of the job"
        )

        let after = try await bench.job(job.id)
        #expect(after.status == .reading)
        #expect(after.worker == "other")
        #expect(after.attempt == 2)
        #expect(bench.outputs() == [])
        worker.requestStop()
        try await run.value
    }
}

/// A number of seconds a test changes while a store's clock reads it.
final class Offset: Sendable {
    private let value = Mutex(0.0)
    var seconds: Double {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

extension WorkerInProcessTests {
    /// The tests of WorkerInProcessTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Worker in process: timing", .serialized)
    struct Timing {
        @Test("a cancelled running job stops within 2 s, ends cancelled, and leaves no file behind")
        func cancellation() async throws {
            let bench = try Bench("cancel")
            defer { bench.directory.remove() }
            let job = try await bench.submit(try await Fixtures.shared.path(.long))
            let worker = bench.worker()
            let run = Task { try await worker.run() }
            defer { run.cancel() }
            #expect(try await eventually(within: .seconds(30)) { try await bench.job(job.id).status == .reading })

            guard case .requested = try await bench.store.cancel(job.id) else {
                Issue.record("cancel of a running job was not a request")
                return
            }
            let asked = ContinuousClock.now
            #expect(try await eventually(within: .seconds(10)) { try await bench.job(job.id).status == .cancelled })
            #expect(
                ContinuousClock.now - asked < .seconds(2),
                "stopped \(ContinuousClock.now - asked) after the request"
            )
            #expect(try await eventually(within: .seconds(5)) { bench.outputs().isEmpty }, "\(bench.outputs())")
            worker.requestStop()
            try await run.value
        }
    }
}
