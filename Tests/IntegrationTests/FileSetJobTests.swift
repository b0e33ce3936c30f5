import Foundation
import JobKinds
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// Thumbnails, storyboards and waveforms as jobs: submitted with the CLI, run by real worker
/// processes, their files checked with ffprobe and by parsing them, their results in the job
/// JSON, `show` and the signed webhook; uploads to a URL template; bad inputs refused at submit;
/// a cancel mid-run; a worker killed before its rename.
@Suite("Thumbnail, storyboard and waveform jobs", .serialized, .timeLimit(.minutes(6)))
struct FileSetJobTests {
    typealias Setup = RemoteMediaTests.Setup
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    @Test func threeKindsRunByAWorkerWithTheirResultsInTheWebhook() async throws {
        let setup = try await Setup("file-sets")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let input = try await Fixtures.shared.path(.basic)
        let thumbs = setup.directory.file("thumbs")
        let board = setup.directory.file("board")
        let peaks = setup.directory.file("peaks")
        let thumbnails = try await setup.submit(
            input,
            [
                "--kind", "thumbnails", "--at", "1s,50%,end", "--exact", "--size", "160x", "--range", "0.5s+3s", "-o",
                thumbs, "--webhook", receiver.url(),
            ],
            preset: nil
        )
        let storyboard = try await setup.submit(
            input,
            ["--kind", "storyboard", "--tiles", "8", "--columns", "4", "--tile-size", "80x", "-o", board],
            preset: nil
        )
        let waveform = try await setup.submit(
            input,
            ["--kind", "waveform", "--files", "json,dat,png", "--pixels-per-second", "10", "-o", peaks],
            preset: nil
        )
        let worker = try JobctlProcess(
            ["worker", "--db", setup.db, "--once", "--allow-private-webhooks", "--webhook-retry-scale", "0.01"],
            log: setup.directory.file("worker.log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret]
        )
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")
        for id in [thumbnails, storyboard, waveform] {
            let job = try await setup.job(id)
            #expect(job.status == .completed, "\(job.kind): \(job.error?.message ?? "")")
        }

        // Thumbnails: three exact frames of the range, 160 wide, each requested/actual time.
        #expect(setup.directoryContents(thumbs) == ["thumb-001.jpg", "thumb-002.jpg", "thumb-003.jpg"])
        for name in ["thumb-001.jpg", "thumb-002.jpg", "thumb-003.jpg"] {
            let probe = try await FFProbe.probe(thumbs + "/" + name)
            #expect(probe.video?.codec_name == "mjpeg" && probe.video?.width == 160 && probe.video?.height == 120)
        }
        let thumbJob = try await setup.job(thumbnails)
        let images = try #require(thumbJob.result?["images"]?.arrayValue)
        #expect(images.compactMap { $0["requestedTime"]?.doubleValue } == [1, 2, 3.5])
        // Exact: the frame shown at each time (25 fps: 1.0 s, 2.0 s; 3.5 s is the range's end,
        // clamped to its last frame, 3.48 s).
        let actual = images.compactMap { $0["actualTime"]?.doubleValue }
        #expect(zip(actual, [1, 2, 3.48]).allSatisfy { abs($0 - $1) < 0.001 }, "\(actual)")
        let files = try #require(thumbJob.result?["files"]?.arrayValue)
        #expect(
            files.compactMap { $0["location"]?.stringValue }
                == ["001", "002", "003"].map { "\(thumbs)/thumb-\($0).jpg" }
        )

        // Storyboard: a 4x2 sprite of 80x60 tiles, cues contiguous over the 4 s.
        #expect(setup.directoryContents(board) == ["storyboard.jpg", "storyboard.json", "storyboard.vtt"])
        let sprite = try await FFProbe.probe(board + "/storyboard.jpg")
        #expect(sprite.video?.width == 320 && sprite.video?.height == 120)
        let vtt = try String(contentsOfFile: board + "/storyboard.vtt", encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT") && vtt.components(separatedBy: "#xywh=").count == 9)
        #expect(vtt.contains("00:00:00.000 --> 00:00:00.500") && vtt.contains("--> 00:00:04.000"))
        let boardJob = try await setup.job(storyboard)
        #expect(boardJob.result?["storyboard"]?["description"]?["tile_width"]?.doubleValue == 80)

        // Waveform: the three files; the JSON is audiowaveform's, 10 points per second.
        #expect(setup.directoryContents(peaks) == ["peaks.dat", "peaks.json", "waveform.png"])
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: peaks + "/peaks.json")))
                as? [String: Any]
        )
        #expect(json["version"] as? Int == 2 && json["samples_per_pixel"] as? Int == 4800 && json["bits"] as? Int == 16)
        #expect((json["data"] as? [Int])?.count == 2 * (json["length"] as? Int ?? -1))
        #expect(try await FFProbe.probe(peaks + "/waveform.png").video?.width == 1800)
        #expect((try await setup.job(waveform)).result?["waveform"]?["samplesPerPixel"]?.doubleValue == 4800)

        // `show` lists the files with the images' times; the webhook carries the same result.
        let show = try await Jobctl.run(["show", thumbnails.rawValue, "--db", setup.db])
        #expect(show.stdoutText.contains("thumb-002.jpg") && show.stdoutText.contains("requested 2.000 s"))
        let record = try #require(receiver.records().first { $0["jobId"] as? String == thumbnails.rawValue })
        #expect(record["valid"] as? Bool == true && record["type"] as? String == "job.completed")
        let body = try #require(record["body"] as? String)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let result = try #require((payload["data"] as? [String: Any])?["result"] as? [String: Any])
        #expect((result["images"] as? [[String: Any]])?.count == 3 && (result["files"] as? [Any])?.count == 3)
    }

    @Test func aSetIsUploadedToATemplateOneFileAtATime() async throws {
        let setup = try await Setup("file-set-upload", ["--fail-put-first", "1"])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let template = setup.server.url("/boards/talk/{name}") + "?sig=s3cr3t"
        let id = try await setup.submit(
            setup.server.url("/talk.mp4"),
            ["--kind", "storyboard", "--tiles", "4", "-o", template],
            preset: nil
        )
        let log = try await setup.runWorker()
        let job = try await setup.job(id)
        #expect(job.status == .completed && job.attempt == 1, "\(job.error?.message ?? "")")
        let puts = setup.requests("PUT")
        // The first PUT failed (500) and was retried; then each file once.
        #expect(puts.map { $0["status"] as? Int } == [500, 200, 200, 200], "\(puts)")
        #expect(
            Set(puts.compactMap { $0["contentType"] as? String }) == ["image/jpeg", "text/vtt", "application/json"]
        )
        let stored = (try? FileManager.default.contentsOfDirectory(atPath: setup.uploads + "/boards/talk"))?.sorted()
        #expect(stored == ["storyboard.jpg", "storyboard.json", "storyboard.vtt"])
        #expect(try await FFProbe.probe(setup.uploads + "/boards/talk/storyboard.jpg").video?.codec_name == "mjpeg")
        let locations = job.result?["files"]?.arrayValue?.compactMap { $0["location"]?.stringValue } ?? []
        #expect(locations.first == setup.server.url("/boards/talk/storyboard.jpg"), "\(locations)")
        let show = try await Jobctl.run(["show", id.rawValue, "--db", setup.db, "--json"])
        #expect(!show.stdoutText.contains("s3cr3t") && !log.contains("s3cr3t"), "a signature leaked")
        #expect(setup.stagingLeftovers().isEmpty, "staging: \(setup.stagingLeftovers())")
    }

    /// `{name}` outside a template's path would send every file to one URL (the set silently
    /// lost, the job "completed" listing one location for all): submit refuses it, and a row
    /// written around submit fails `output_forbidden` before anything is uploaded.
    @Test func aTemplateWhoseFilesWouldShareAURLLosesNothing() async throws {
        let setup = try await Setup("file-set-template")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let refused = [
            setup.server.url("/boards/x") + "#{name}", setup.server.url("/boards/x") + "?n={name}",
            setup.server.url("/boards/x").replacingOccurrences(of: "://", with: "://u:{name}@"),
            setup.server.url("/boards/{name}/../x"), setup.server.url("/boards/{name}/%2e%2e/x"),
        ]
        for template in refused {
            let result = try await Jobctl.run(
                ["submit", setup.server.url("/talk.mp4"), "--db", setup.db, "--kind", "thumbnails", "-o", template]
                    + ["--allow-private-webhooks"]
            )
            #expect(result.status == 64, "\(template): \(result.stderr)")
        }
        // Stored as is: the worker refuses it too.
        let (job, _) = try await setup.store.submit(
            JobRequest(
                kind: .thumbnails,
                input: setup.server.url("/talk.mp4"),
                output: setup.server.url("/boards/x") + "#{name}",
                preset: "thumbnails",
                presetSettings: .object(["times": .array([]), "format": .string("jpg"), "count": .number(3)])
            )
        )
        _ = try await setup.runWorker()
        let ended = try await setup.job(job.id)
        #expect(ended.status == .failed && ended.error?.code == .outputForbidden, "\(ended.error?.description ?? "")")
        #expect(ended.attempt == 1)
        #expect(setup.requests("PUT").isEmpty, "\(setup.requests("PUT"))")
    }

    /// A worker's `--max-output-size` bounds a whole set, and `--max-duration` every kind: over
    /// either, the job fails `limit_exceeded` on its first attempt and shows no file.
    @Test func aWorkersLimitsBoundEverySet() async throws {
        let setup = try await Setup("file-set-limits")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.basic)
        let big = try await setup.submit(
            input,
            ["--kind", "waveform", "--samples-per-pixel", "2", "--files", "json,dat", "-o", setup.directory.file("w")],
            preset: nil
        )
        let thumbs = try await setup.submit(
            input,
            ["--kind", "thumbnails", "--count", "30", "--format", "png", "-o", setup.directory.file("t")],
            preset: nil
        )
        let long = try await setup.submit(
            input,
            ["--kind", "storyboard", "--tiles", "4", "-o", setup.directory.file("s")],
            preset: nil
        )
        _ = try await setup.runWorker(["--max-output-size", "300K"])
        for id in [big, thumbs] {
            let job = try await setup.job(id)
            #expect(job.status == .failed && job.error?.code == .limitExceeded && job.attempt == 1, "\(job.kind)")
            #expect(job.error?.message.contains("--max-output-size") == true, "\(job.error?.message ?? "")")
        }
        #expect(try await setup.job(long).status == .completed)
        let again = try await setup.submit(
            input,
            ["--kind", "storyboard", "--tiles", "4", "-o", setup.directory.file("s2")],
            preset: nil
        )
        _ = try await setup.runWorker(["--max-duration", "1s"])
        let refused = try await setup.job(again)
        #expect(refused.status == .failed && refused.error?.code == .limitExceeded, "\(refused.error?.message ?? "")")
        for name in ["w", "t", "s2"] {
            let left = (try? FileManager.default.contentsOfDirectory(atPath: setup.directory.file(name))) ?? []
            #expect(left.isEmpty, "\(name): \(left)")
        }
    }

    /// A rerun into a directory that holds an earlier set replaces the whole set: no file of
    /// the earlier one is left beside the new one (a mix), and files that are not the set's are
    /// kept. The same in process (`jobctl thumbnails`).
    @Test func aRerunReplacesTheWholeEarlierSet() async throws {
        let setup = try await Setup("file-set-rerun")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.basic)
        let output = setup.directory.file("thumbs")
        try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: output + "/notes.txt"))
        _ = try await setup.submit(input, ["--kind", "thumbnails", "--count", "5", "-o", output], preset: nil)
        _ = try await setup.runWorker()
        _ = try await setup.submit(input, ["--kind", "storyboard", "--tiles", "4", "-o", output], preset: nil)
        _ = try await setup.submit(input, ["--kind", "thumbnails", "--count", "2", "-o", output], preset: nil)
        _ = try await setup.runWorker()
        let visible = try FileManager.default.contentsOfDirectory(atPath: output).filter { !$0.hasPrefix(".") }.sorted()
        #expect(
            visible == [
                "notes.txt", "storyboard.jpg", "storyboard.json", "storyboard.vtt", "thumb-001.jpg", "thumb-002.jpg",
            ],
            "\(visible)"
        )
        let inProcess = setup.directory.file("local")
        for count in ["4", "1"] {
            let result = try await Jobctl.run(["thumbnails", input, "--count", count, "-o", inProcess])
            #expect(result.status == 0, "\(result.stderr)")
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: inProcess).filter { !$0.hasPrefix(".") } == [
                "thumb-001.jpg"
            ]
        )
    }

    @Test func badInputsAreRefusedAtSubmit() async throws {
        let directory = try TemporaryDirectory("file-set-refusals")
        defer { directory.remove() }
        let db = directory.file("jobs.sqlite")
        func submit(_ input: String, _ arguments: [String]) async throws -> ProcessResult {
            try await Jobctl.run(["submit", input, "--db", db] + arguments)
        }
        let audioOnly = try await Fixtures.shared.path(.audioOnly)
        let videoOnly = try await Fixtures.shared.path(.videoOnly)
        let noVideo = try await submit(audioOnly, ["--kind", "thumbnails", "-o", directory.file("t")])
        #expect(noVideo.status == 1 && noVideo.stderr.contains("input_unsupported"), "\(noVideo.stderr)")
        let noStoryboard = try await submit(audioOnly, ["--kind", "storyboard", "-o", directory.file("s")])
        #expect(noStoryboard.status == 1 && noStoryboard.stderr.contains("input_unsupported"), "\(noStoryboard.stderr)")
        let wideSprite = try await submit(videoOnly, ["--kind", "storyboard", "--tiles", "200", "--columns", "100"])
        #expect(wideSprite.status == 1 && wideSprite.stderr.contains("limit_exceeded"), "\(wideSprite.stderr)")
        for (output, message) in [
            ("https://bucket.example/thumbs/x.jpg?key={name}", "{name} belongs in the path"),
            (directory.file("{name}"), "{name} belongs in the path"),
        ] {
            let refused = try await submit(
                videoOnly,
                ["--kind", "thumbnails", "-o", output, "--allow-private-webhooks"]
            )
            #expect(refused.status == 64 && refused.stderr.contains(message), "\(output): \(refused.stderr)")
        }
        let pngOptionWithoutPNG = try await submit(audioOnly, ["--kind", "waveform", "--width", "900"])
        #expect(pngOptionWithoutPNG.status == 64 && pngOptionWithoutPNG.stderr.contains("add png to --files"))
        let bitsForImages = try await submit(videoOnly, ["--kind", "thumbnails", "--bits", "8"])
        #expect(bitsForImages.status == 64 && bitsForImages.stderr.contains("--bits is for --kind waveform"))
        let noAudio = try await submit(videoOnly, ["--kind", "waveform", "-o", directory.file("w")])
        #expect(noAudio.status == 1 && noAudio.stderr.contains("no audio track"), "\(noAudio.stderr)")
        try #require(FileManager.default.createFile(atPath: directory.file("a-file"), contents: Data("x".utf8)))
        let notADirectory = try await submit(videoOnly, ["--kind", "thumbnails", "-o", directory.file("a-file")])
        #expect(notADirectory.stderr.contains("output_forbidden"), "\(notADirectory.stderr)")
        let noTemplate = try await submit(
            videoOnly,
            ["--kind", "thumbnails", "-o", "https://bucket.example/thumbs/", "--allow-private-webhooks"]
        )
        #expect(noTemplate.status == 64 && noTemplate.stderr.contains("{name}"), "\(noTemplate.stderr)")
        let wrongOption = try await submit(videoOnly, ["--kind", "waveform", "--at", "1s"])
        #expect(wrongOption.status == 64 && wrongOption.stderr.contains("--at is for --kind thumbnails"))
        let presetForImages = try await submit(videoOnly, ["--kind", "storyboard", "--preset", "low"])
        #expect(presetForImages.status == 64, "\(presetForImages.stderr)")
        let store = try SQLiteJobStore(path: db)
        #expect(try await store.jobs(status: nil, limit: 10).isEmpty, "a refused job was queued")
    }

    /// The output directory turned into a file after submit: the job fails `output_forbidden`,
    /// not retried, and nothing is left beside it.
    @Test func anOutputThatIsNoLongerADirectoryFailsTheJob() async throws {
        let setup = try await Setup("file-set-forbidden")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let output = setup.directory.file("out")
        let id = try await setup.submit(
            try await Fixtures.shared.path(.basic),
            ["--kind", "thumbnails", "--count", "2", "-o", output],
            preset: nil
        )
        try #require(FileManager.default.createFile(atPath: output, contents: Data("mine".utf8)))
        _ = try await setup.runWorker()
        let job = try await setup.job(id)
        #expect(job.status == .failed && job.error?.code == .outputForbidden && job.attempt == 1)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == "mine")
        #expect(!setup.directory.contents().contains { $0.hasSuffix(".jobctl.tmp") })
    }

    /// Cancelled while it is still being prepared (its remote input opening slowly): the job
    /// ends `cancelled` and the worker lives on (a reader cancelled before it started used to
    /// trap).
    @Test func aCancelWhilePreparingLeavesTheWorkerRunning() async throws {
        let setup = try await Setup("file-set-cancel-early", ["--get-rate", "20000"])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let (id, worker) = try await Self.runSlowly(
            setup,
            ["--kind", "waveform", "-o", setup.directory.file("peaks")]
        )
        defer { worker.signal(SIGKILL) }
        try #require(
            try await eventually(within: .seconds(60)) { try await setup.job(id).status == .reading },
            "never claimed: \(worker.log)"
        )
        #expect(try await setup.job(id).progress == 0, "it was meant to be cancelled while opening")
        #expect(try await Jobctl.run(["cancel", id.rawValue, "--db", setup.db]).status == 0)
        let cancelled = try await eventually(within: .seconds(10)) { try await setup.job(id).status == .cancelled }
        #expect(cancelled, "\(worker.log)")
        // Alive, and stops as a healthy worker does (a worker without --once never exits alone).
        #expect(worker.exited == nil, "the worker died: \(worker.log)")
        worker.signal(SIGTERM)
        #expect(try await worker.waitForExit(timeout: .seconds(30))?.status == 0, "\(worker.log)")
    }

    /// Submits a job of the 20 s `long` clip read through the (slow) media server, and starts a
    /// worker for it.
    static func runSlowly(_ setup: Setup, _ arguments: [String]) async throws -> (JobID, JobctlProcess) {
        try FileManager.default.copyItem(
            atPath: try await Fixtures.shared.path(.long),
            toPath: setup.directory.file("media/long.mp4")
        )
        let id = try await setup.submit(setup.server.url("/long.mp4"), arguments, preset: nil)
        let worker = try JobctlProcess(
            ["worker", "--db", setup.db, "--allow-private-webhooks", "--staging-dir", setup.staging],
            log: setup.directory.file("worker.log")
        )
        return (id, worker)
    }

    /// A worker killed (SIGKILL) just before showing its thumbnails leaves only hidden
    /// temporaries; the next attempt removes them and writes the set.
    @Test func aKilledWorkersTemporariesAreRemovedByTheNextAttempt() async throws {
        let setup = try await Setup("file-set-killed")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let output = setup.directory.file("thumbs")
        let id = try await setup.submit(
            try await Fixtures.shared.path(.basic),
            ["--kind", "thumbnails", "--count", "3", "-o", output],
            preset: nil
        )
        let a = try FencingTests.worker(setup, "A", failpoints: "before-rename", once: true)
        try #require(
            await eventually(within: .seconds(60)) { FencingTests.isStopped(a.pid) },
            "A never reached its rename: \(a.log)"
        )
        let hidden = setup.directoryContents(output)
        #expect(
            hidden.count == 3
                && hidden.allSatisfy { $0.hasPrefix(".") && $0.contains(".\(id)-1-") && $0.hasSuffix(".jobctl.tmp") },
            "\(hidden)"
        )
        a.signal(SIGKILL)
        let job = try await FencingTests.takeOver(setup, id, name: "B")
        #expect(job.status == .completed && job.attempt == 2, "\(job.error?.message ?? "")")
        #expect(setup.directoryContents(output) == ["thumb-001.jpg", "thumb-002.jpg", "thumb-003.jpg"])
    }
}

extension RemoteMediaTests.Setup {
    /// Every name in `directory`, hidden ones included, sorted.
    func directoryContents(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Every webhook event the store holds, once none is waiting or being sent: after that no
    /// request of this database reaches a receiver (a settled outbox, the signal a test of
    /// "exactly one webhook" waits for instead of a pause). An empty outbox is settled too:
    /// callers compare what is returned with the events they expect.
    func settledDeliveries(within timeout: Duration = .seconds(60)) async throws -> [WebhookDelivery] {
        let settled = try await eventually(within: timeout) {
            try await store.deliveries(job: nil, limit: 1000).allSatisfy { [.delivered, .failed].contains($0.status) }
        }
        try #require(settled, "webhooks still waiting to be sent after \(timeout)")
        return try await store.deliveries(job: nil, limit: 1000)
    }
}

extension FileSetJobTests {
    /// The tests of FileSetJobTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Thumbnail, storyboard and waveform jobs: timing", .serialized)
    struct Timing {
        /// A storyboard reading a slow remote input is cancelled mid-run: the job is `cancelled`
        /// within 2 s and no file appears.
        @Test func aCancelStopsAStoryboardWithinTwoSeconds() async throws {
            let setup = try await Setup("file-set-cancel", ["--get-rate", "300000"])
            defer {
                setup.directory.remove()
                setup.server.stop()
            }
            let output = setup.directory.file("board")
            let (id, worker) = try await FileSetJobTests.runSlowly(
                setup,
                ["--kind", "storyboard", "--tiles", "100", "-o", output]
            )
            defer { worker.signal(SIGKILL) }
            try #require(
                try await eventually(within: .seconds(60)) { try await setup.job(id).progress > 0 },
                "the storyboard never started: \(worker.log)"
            )
            let asked = ContinuousClock.now
            #expect(try await Jobctl.run(["cancel", id.rawValue, "--db", setup.db]).status == 0)
            let cancelled = try await eventually(within: .seconds(10)) { try await setup.job(id).status == .cancelled }
            let took = ContinuousClock.now - asked
            #expect(cancelled && took < .seconds(2), "cancelled: \(cancelled) after \(took); \(worker.log)")
            // The directory the run created is gone again with everything in it.
            #expect(!FileManager.default.fileExists(atPath: output), "left: \(setup.directoryContents(output))")
        }
    }
}
