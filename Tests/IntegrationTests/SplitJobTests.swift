import Foundation
import JobKinds
import Media
import MediaTestKit
import Queue
import QueueSQLite
import SafeHTTP
import Testing

/// Split exports on a queue (issue 27): real worker processes sharing a scratch directory
/// encode the segments and the audio as children; the parent's join publishes one file that
/// ffprobe cannot tell from the one-process export; workers killed with SIGKILL during the
/// fan-out, mid-segment and during the join lose nothing, encode nothing twice, and the
/// webhook is sent once.
@Suite("Split exports on workers", .serialized, .timeLimit(.minutes(8)))
struct SplitJobTests {
    typealias Setup = RemoteMediaTests.Setup
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    static func worker(
        _ setup: Setup,
        _ name: String,
        failpoints: String? = nil,
        once: Bool = true,
        secret: String,
        arguments: [String] = []
    ) throws -> JobctlProcess {
        try JobctlProcess(
            [
                "worker", "--db", setup.db, "--name", name, "--lease", "2s", "--scratch",
                setup.directory.file("scratch"),
                "--staging-dir", setup.staging + "/" + name, "--allow-private-webhooks", "--webhook-retry-scale",
                "0.01",
            ] + (once ? ["--once"] : []) + arguments,
            log: setup.directory.file("\(name).log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret].merging(failpoints.map { ["JOBCTL_FAILPOINTS": $0] } ?? [:])
            {
                $1
            }
        )
    }

    /// The frame times and audio samples of the one-process export of the same job.
    static func oneProcess(
        _ input: String,
        preset: String,
        range: String?,
        to path: String
    ) async throws -> (
        [Double], Int
    ) {
        let export = try await Jobctl.run(
            ["export", input, "--preset", preset, "-o", path] + (range.map { ["--range", $0] } ?? [])
        )
        try #require(export.status == 0, "\(export.stderr)")
        return (try await FFProbe.videoFrameTimes(path), try await FFProbe.audioSampleCount(path))
    }

    /// `output` has the frame times and audio samples of the one-process export of `input`
    /// (preset `low`), and decodes without an error.
    static func expectOneProcessExport(
        _ output: String,
        of input: String,
        range: String,
        in directory: TemporaryDirectory
    ) async throws {
        let (frames, samples) = try await oneProcess(
            input,
            preset: "low",
            range: range,
            to: directory.file("whole.mp4")
        )
        let splitFrames = try await FFProbe.videoFrameTimes(output)
        #expect(splitFrames.count == frames.count && zip(splitFrames, frames).allSatisfy { abs($0 - $1) < 1e-4 })
        #expect(try await FFProbe.audioSampleCount(output) == samples)
        #expect(try await FFProbe.decodeErrors(output) == "")
    }

    static func children(_ setup: Setup, of id: JobID) async throws -> [Job] {
        try await setup.store.jobs(JobQuery(parent: id, limit: 100)).sorted {
            ($0.childIndex ?? 0) < ($1.childIndex ?? 0)
        }
    }

    @Test func twoWorkersMakeTheOneProcessExport() async throws {
        let setup = try await Setup("split-queue")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let input = try await Fixtures.shared.path(.splitVFR)
        let output = setup.directory.file("split.mp4")
        let id = try await setup.submit(
            input,
            ["--split", "4s", "--range", "1s+21s", "-o", output, "--webhook", receiver.url()]
        )
        let workers = try ["A", "B"].map { try Self.worker(setup, $0, secret: secret) }
        for worker in workers {
            #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")
        }
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let children = try await Self.children(setup, of: id)
        #expect(children.count >= 5 && children.allSatisfy { $0.status == .completed && $0.attempt == 1 })
        #expect(children.first?.output.hasSuffix("/audio.m4a") == true, "the audio first, once")

        try await Self.expectOneProcessExport(output, of: input, range: "1s+21s", in: setup.directory)

        // The result: the segment table, each with its worker and speed.
        let segments = try #require(job.result?["segments"]?.arrayValue)
        #expect(segments.count == children.count - 1)
        #expect(segments.allSatisfy { ["A", "B"].contains($0["worker"]?.stringValue ?? "") && $0["fps"] != nil })
        // The seam scores: measured by each segment's own worker (its first and last frames,
        // in its result), not by the join; one score pair per cut.
        for (position, child) in children.dropFirst().enumerated() {
            let edges = try #require(child.result?["seamEdges"], "segment \(position) measured no edges")
            #expect((edges["first"] == nil) == (position == 0), "\(edges)")
            #expect((edges["last"] == nil) == (position == segments.count - 1), "\(edges)")
        }
        #expect(segments.first?["seamPSNR"] == nil)
        #expect(segments.dropFirst().allSatisfy { $0["seamPSNR"]?.arrayValue?.count == 2 }, "\(segments)")
        // The same run in one process (`export --split`, the other driver of `SplitRun`):
        // the same cuts, frames and seams, and the same picture timing.
        let local = setup.directory.file("split-local.mp4")
        let export = try await Jobctl.run(
            ["export", input, "--preset", "low", "--split", "4s", "--range", "1s+21s", "-o", local, "--json"]
        )
        try #require(export.status == 0, "\(export.stderr)")
        let localSegments = try #require(
            try JSONDecoder().decode(JSONValue.self, from: Data(export.stdoutText.utf8))["segments"]?.arrayValue
        )
        let table = { (segments: [JSONValue]) in
            segments.map { segment in
                ["index", "firstFrame", "lastFrame", "start", "duration"].map { segment[$0]?.doubleValue ?? -1 }
            }
        }
        #expect(table(localSegments) == table(segments), "one process: \(localSegments)\nqueue: \(segments)")
        #expect(localSegments.dropFirst().allSatisfy { $0["seamPSNR"]?.arrayValue?.count == 2 })
        #expect(try await FFProbe.videoFrameTimes(local) == FFProbe.videoFrameTimes(output))
        // Exactly one webhook, the parent's; the scratch directory is empty again.
        #expect(try await setup.settledDeliveries().map(\.jobID) == [id])
        #expect(receiver.records().map { $0["jobId"] as? String } == [id.rawValue])
        #expect(setup.directoryContents(setup.directory.file("scratch")).isEmpty)
        // `show` lists the children with their ranges.
        let show = try await Jobctl.run(["show", id.rawValue, "--db", setup.db])
        #expect(show.stdoutText.contains("child #\(children.count - 1)"), "\(show.stdoutText)")
    }

    @Test func workersKilledDuringFanOutMidSegmentAndJoinLoseNothing() async throws {
        let setup = try await Setup("split-chaos")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        // Slow to encode (temporal noise at CRF 18): a segment is still running when it is killed.
        let input = try await Fixtures.shared.path(.long)
        let output = setup.directory.file("split.mp4")
        let id = try await setup.submit(
            input,
            ["--split", "4s", "-o", output, "--webhook", receiver.url()],
            preset: "highest"
        )

        // 1. Killed just before the fan-out: no child exists, the parent is taken over.
        let a = try Self.worker(setup, "A", failpoints: "before-fan-out", secret: secret)
        try #require(try await eventually(within: .seconds(60)) { FencingTests.isStopped(a.pid) }, "\(a.log)")
        a.signal(SIGKILL)
        _ = try await a.waitForExit(timeout: .seconds(10))
        #expect(try await Self.children(setup, of: id).isEmpty, "a fan-out is all or nothing")

        // 2. Killed mid-segment: the segment runs again elsewhere; the others stay done.
        let b = try Self.worker(setup, "B", once: false, secret: secret)
        let running = try await eventually(within: .seconds(120)) {
            try await Self.children(setup, of: id).contains {
                $0.status == .reading && $0.worker == "B" && $0.progress > 0.2 && $0.childIndex ?? 0 > 0
            }
        }
        try #require(running, "no segment ran on B: \(b.log)")
        b.signal(SIGKILL)
        _ = try await b.waitForExit(timeout: .seconds(10))

        // 3. Killed just before the join shows its output.
        let c = try Self.worker(setup, "C", failpoints: "before-join-commit", secret: secret)
        try #require(
            try await eventually(within: .seconds(240)) { FencingTests.isStopped(c.pid) },
            "C never reached the join: \(c.log)"
        )
        c.signal(SIGKILL)
        _ = try await c.waitForExit(timeout: .seconds(10))
        #expect(!FileManager.default.fileExists(atPath: output), "nothing shown by a killed join")

        // 4. A last worker takes the join over once C's lease has expired, and finishes.
        let d = try Self.worker(setup, "D", once: false, secret: secret)
        let ended = try await eventually(within: .seconds(180)) { try await setup.job(id).status.isTerminal }
        d.signal(SIGTERM)
        #expect(try await d.waitForExit(timeout: .seconds(30))?.status == 0, "\(d.log)")
        try #require(ended, "D did not finish the job: \(d.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.code.rawValue ?? "") \(job.error?.message ?? "")")
        #expect(job.worker == "D")

        // Nothing encoded twice: every child completed once; only the one killed ran twice.
        let children = try await Self.children(setup, of: id)
        #expect(children.allSatisfy { $0.status == .completed })
        let attempts = children.map(\.attempt)
        #expect(attempts.filter { $0 == 2 }.count == 1 && attempts.allSatisfy { $0 <= 2 }, "\(attempts)")
        let segments = try #require(job.result?["segments"]?.arrayValue)
        #expect(segments.allSatisfy { $0["reencoded"] == nil }, "the join did not encode again")

        // The output is the one-process export's, and its webhook came once.
        let (frames, samples) = try await Self.oneProcess(
            input,
            preset: "highest",
            range: nil,
            to: setup.directory.file("whole.mp4")
        )
        #expect(try await FFProbe.videoFrameTimes(output).count == frames.count)
        #expect(try await FFProbe.audioSampleCount(output) == samples)
        #expect(try await setup.settledDeliveries().map(\.jobID) == [id])
        let records = receiver.records()
        #expect(records.count == 1 && records.first?["jobId"] as? String == id.rawValue, "\(records.count) webhooks")
    }

    @Test func aDamagedSegmentIsEncodedAgainByTheJoin() async throws {
        let setup = try await Setup("split-reencode")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let (id, input, output, worker) = try await stoppedAtTheJoin(setup, range: "0s+16s")
        // Every segment is in scratch; one is damaged before the join reads it.
        let directory = setup.directory.file("scratch/\(id).split")
        let damaged = directory + "/segment-00002.mp4"
        let size = (try FileManager.default.attributesOfItem(atPath: damaged)[.size] as? NSNumber)?.intValue ?? 0
        try Data(repeating: 0x47, count: max(1, size / 2)).write(to: URL(fileURLWithPath: damaged))
        kill(worker.pid, SIGCONT)
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")

        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let segments = try #require(job.result?["segments"]?.arrayValue)
        #expect(segments[2]["reencoded"]?.doubleValue == 1, "\(segments[2])")
        #expect(segments.enumerated().allSatisfy { $0.offset == 2 || $0.element["reencoded"] == nil })
        // The segment encoded again has no scores from its first worker: its cuts are measured
        // in the join, and every cut still has its pair.
        #expect(segments.dropFirst().allSatisfy { $0["seamPSNR"]?.arrayValue?.count == 2 }, "\(segments)")
        let (frames, _) = try await Self.oneProcess(
            input,
            preset: "low",
            range: "0s+16s",
            to: setup.directory.file("whole.mp4")
        )
        #expect(try await FFProbe.videoFrameTimes(output).count == frames.count)
        #expect(try await FFProbe.decodeErrors(output) == "")
    }

    /// An API key with its own directories under an input and an output root, and `talk.mp4`
    /// (`splitCFR`) in its input directory.
    struct Tenant {
        let setup: Setup
        let owner: String
        var inputs: String { setup.directory.file("in") }
        var outputs: String { setup.directory.file("out") }

        init(_ setup: Setup, owner: String) async throws {
            (self.setup, self.owner) = (setup, owner)
            for root in [setup.directory.file("in"), setup.directory.file("out")] {
                try FileManager.default.createDirectory(atPath: root + "/" + owner, withIntermediateDirectories: true)
            }
            try FileManager.default.copyItem(
                atPath: try await Fixtures.shared.path(.splitCFR),
                toPath: setup.directory.file("in/\(owner)/talk.mp4")
            )
        }

        /// A split export of `talk.mp4` in 4 s segments, submitted as the key submits it.
        func submitSplit(output: String, range: String, maxAttempts: Int? = nil) async throws -> JobID {
            var draft = SubmissionDraft(
                input: "talk.mp4",
                output: output,
                range: .text(range),
                kindFields: ["preset": .string("low")]
            )
            draft.split = "4s"
            draft.maxAttempts = maxAttempts
            let request = try Submission.request(
                draft,
                rules: SubmissionRules(
                    place: .tenant(owner: owner, roots: PathConfinement(inputRoot: inputs, outputRoot: outputs)),
                    catalog: try PresetCatalog(customFile: nil),
                    addressPolicy: AddressPolicy(),
                    naming: .json
                )
            )
            return try await setup.store.submit(request).job.id
        }

        /// A `worker --once` with the roots and the shared scratch.
        func worker() throws -> JobctlProcess {
            try JobctlProcess(
                [
                    "worker", "--db", setup.db, "--once", "--input-root", inputs, "--output-root", outputs,
                    "--scratch", setup.directory.file("scratch"), "--staging-dir", setup.staging,
                ],
                log: setup.directory.file("worker.log")
            )
        }
    }

    /// An API key's split export: its paths relative to its directories under the roots, its
    /// segments in the operator's scratch, its output in its own directory.
    @Test func anAPIKeysSplitExportStaysInItsDirectories() async throws {
        let setup = try await Setup("split-tenant")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let tenant = try await Tenant(setup, owner: "k7tenant01")
        let (owner, outputs) = (tenant.owner, tenant.outputs)
        let id = try await tenant.submitSplit(output: "talk.low.mp4", range: "0s+12s")
        let worker = try tenant.worker()
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        #expect(job.result?["output"]?.stringValue == "talk.low.mp4", "the key sees its own relative path")
        let children = try await Self.children(setup, of: id)
        #expect(children.count >= 3 && children.allSatisfy { $0.owner == owner && $0.status == .completed })
        #expect(try await FFProbe.decodeErrors(outputs + "/\(owner)/talk.low.mp4") == "")
        #expect(setup.directoryContents(outputs + "/\(owner)") == ["talk.low.mp4"], "nothing else in its directory")
    }
}

extension SplitJobTests {
    /// The tests of SplitJobTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Split exports on workers: timing", .serialized)
    struct Timing {
        @Test func cancelReachesEverySegmentAndRetryRerunsOnlyTheUnfinished() async throws {
            let setup = try await Setup("split-cancel")
            defer {
                setup.directory.remove()
                setup.server.stop()
            }
            let input = try await Fixtures.shared.path(.long)
            let output = setup.directory.file("split.mp4")
            let id = try await setup.submit(input, ["--split", "4s", "-o", output], preset: "highest")
            let worker = try JobctlProcess(
                [
                    "worker", "--db", setup.db, "--name", "W", "--concurrency", "2", "--scratch",
                    setup.directory.file("scratch"), "--staging-dir", setup.staging,
                ],
                log: setup.directory.file("W.log")
            )
            defer { worker.signal(SIGKILL) }
            // Once a segment has completed and others run, the parent is cancelled.
            let midway = try await eventually(within: .seconds(120)) {
                let children = try await SplitJobTests.children(setup, of: id)
                return children.contains { $0.status == .completed && ($0.childIndex ?? 0) > 0 }
                    && children.contains { $0.status == .reading }
            }
            try #require(midway, "no segment completed: \(worker.log)")
            let cancel = try await Jobctl.run(["cancel", id.rawValue, "--db", setup.db])
            #expect(cancel.status == 0, "\(cancel.stderr)")
            let asked = ContinuousClock.now
            #expect(try await setup.job(id).status == .cancelled, "a waiting parent ends at once")
            let stopped = try await eventually(within: .seconds(10)) {
                try await SplitJobTests.children(setup, of: id).allSatisfy(\.status.isTerminal)
            }
            #expect(
                stopped && ContinuousClock.now - asked < .seconds(3),
                "children stopped after \(ContinuousClock.now - asked)"
            )
            let before = try await SplitJobTests.children(setup, of: id)
            let completed = before.filter { $0.status == .completed }
            #expect(!completed.isEmpty && before.contains { $0.status == .cancelled })
            #expect(!FileManager.default.fileExists(atPath: output))

            // The retry reruns only what did not complete; the completed segments are not encoded again.
            let retry = try await Jobctl.run(["retry", id.rawValue, "--db", setup.db])
            #expect(retry.status == 0, "\(retry.stderr)")
            let done = try await eventually(within: .seconds(180)) { try await setup.job(id).status.isTerminal }
            try #require(done, "the retried job did not end: \(worker.log)")
            #expect(try await setup.job(id).status == .completed)
            let children = try await SplitJobTests.children(setup, of: id)
            let after = Dictionary(uniqueKeysWithValues: children.map { ($0.id, $0) })
            for child in completed {
                let again = try #require(after[child.id])
                #expect(
                    again.attempt == child.attempt && again.finishedAt == child.finishedAt,
                    "child \(child.childIndex ?? -1) ran again"
                )
            }
            #expect(after.values.allSatisfy { $0.status == .completed })
            #expect(try await FFProbe.decodeErrors(output) == "")
        }
    }
}
