import Foundation
import MediaTestKit
import Synchronization
import Testing

@Suite("jobctl command line", .timeLimit(.minutes(5)))
struct CLITests {
    @Test func presetsJSONListsEveryPresetWithItsFFmpegCommand() async throws {
        let result = try await Jobctl.run(["presets", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let presets = try #require(try Jobctl.json(result) as? [[String: Any]])
        #expect(presets.count == 13)
        for preset in presets {
            let command = try #require(preset["ffmpeg"] as? String)
            #expect(command.hasPrefix("ffmpeg -i INPUT ") && command.hasSuffix(" OUTPUT"), "\(command)")
            #expect(preset["name"] is String && preset["format"] is String && preset["summary"] is String)
        }
        let low = try #require(presets.first { $0["name"] as? String == "low" })
        let video = try #require(low["video"] as? [String: Any])
        #expect(
            video["maxWidth"] as? Int == 426 && video["bitrate"] as? Int == 300_000
                && video["codec"] as? String == "h264"
        )
        let human = try await Jobctl.run(["presets"])
        #expect(human.stdoutText.contains("low") && human.stdoutText.contains("ffmpeg -i INPUT"))
    }

    /// The printed ffmpeg command runs as printed and produces what the preset says.
    @Test func printedFFmpegCommandRuns() async throws {
        let input = try await Fixtures.shared.path(.anamorphic)
        let presets = try #require(try Jobctl.json(try await Jobctl.run(["presets", "--json"])) as? [[String: Any]])
        let command = try #require(presets.first { $0["name"] as? String == "low" }?["ffmpeg"] as? String)
        try await withTemporaryDirectory("ffmpeg-command") { directory in
            let output = directory.file("cli.mp4")
            let shell = command.replacingOccurrences(of: "INPUT", with: "'\(input)'").replacingOccurrences(
                of: "OUTPUT",
                with: "'\(output)'"
            )
            let ran = try await ProcessRunner.run(
                "/bin/sh",
                [
                    "-c",
                    shell.replacingOccurrences(of: "ffmpeg ", with: "ffmpeg -nostdin -v error ", options: .anchored),
                ]
            )
            #expect(ran.status == 0, "\(ran.stderr)")
            let ours = directory.file("ours.mp4")
            #expect(try await Jobctl.run(["export", input, "--preset", "low", "-o", ours]).status == 0)
            let theirs = try #require(try await FFProbe.probe(output).video)
            let mine = try #require(try await FFProbe.probe(ours).video)
            #expect(theirs.width == mine.width && theirs.height == mine.height && theirs.codec_name == mine.codec_name)
        }
    }

    @Test func exportJSONPrintsTheResult() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("export-json") { directory in
            let output = directory.file("clip.mp4")
            let result = try await Jobctl.run([
                "export", input, "--preset", "low", "--range", "1s+2s", "-o", output, "--json",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let json = try #require(try Jobctl.json(result) as? [String: Any])
            #expect(json["output"] as? String == output)
            #expect((json["bytes"] as? Int ?? 0) > 0)
            #expect(abs((json["duration"] as? Double ?? 0) - 2) < 0.01)
            let range = try #require(json["actualRange"] as? [String: Double])
            #expect(range["start"] == 1 && abs((range["duration"] ?? 0) - 2) < 0.01)
            let tracks = try #require(json["tracks"] as? [[String: Any]])
            #expect(tracks.map { $0["mediaType"] as? String } == ["video", "audio"])
            #expect(tracks[0]["frames"] as? Int == 50 && tracks[1]["samples"] as? Int == 88200)
            #expect(result.stderr.isEmpty, "nothing on stderr without a TTY: \(result.stderr)")
        }
    }

    @Test func probeJSONHasTheSpecFields() async throws {
        let input = try await Fixtures.shared.path(.rotated)
        let result = try await Jobctl.run(["probe", input, "--json", "--presets"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try Jobctl.json(result) as? [String: Any])
        #expect(json["container"] as? String == "mov,mp4,m4a,3gp,3g2,mj2")
        #expect(abs((json["duration"] as? Double ?? 0) - 4) < 0.1)
        let tracks = try #require(json["tracks"] as? [[String: Any]])
        let video = try #require(tracks.first { $0["mediaType"] as? String == "video" })
        for key in [
            "codec", "profile", "width", "height", "rotation", "sampleAspectRatio", "frameRate", "bitrate", "startTime",
        ] {
            #expect(video[key] != nil, "video track lacks \(key)")
        }
        #expect(video["rotation"] as? Int == 90)
        let audio = try #require(tracks.first { $0["mediaType"] as? String == "audio" })
        for key in ["codec", "sampleRate", "channels", "channelLayout", "bitrate", "startTime"] {
            #expect(audio[key] != nil, "audio track lacks \(key)")
        }
        let presets = try #require(json["presets"] as? [[String: Any]])
        #expect(presets.count == 13 && presets.allSatisfy { $0["compatible"] != nil })
        let human = try await Jobctl.run(["probe", input])
        #expect(human.stdoutText.contains("rotated 90°") && human.stdoutText.contains("shown 240x320"))
    }

    struct Failure: Sendable, CustomStringConvertible {
        var arguments: [String]
        var status: Int32
        var line: String
        var description: String { arguments.joined(separator: " ") }
    }

    static let failures: [Failure] = [
        Failure(
            arguments: ["export", "/nonexistent/in.mov", "--preset", "low", "-o", "OUT"],
            status: 1,
            line: "error: input_not_found: /nonexistent/in.mov does not exist"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "lowest", "-o", "OUT"],
            status: 64,
            line: "error: preset_unknown: no preset named 'lowest'"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low", "--range", "4s-1s", "-o", "OUT"],
            status: 64,
            line: "invalid range '4s-1s'"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low", "--range", "9s+1s", "-o", "OUT"],
            status: 1,
            line: "error: range_out_of_bounds:"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low", "-o", "/nonexistent/dir/out.mp4"],
            status: 1,
            line: "error: output_unwritable:"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low"],
            status: 64,
            line: "Missing expected argument '--output <out>'"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low", "-o", "OUT", "--format", "avi"],
            status: 64,
            line: "avi"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low", "-o", "https://bucket.example/a.mp4"],
            status: 64,
            line: "export writes a local file"
        ),
        Failure(
            arguments: ["export", "INPUT", "--preset", "low", "-o", "OUT", "--presets", "/nonexistent.json"],
            status: 64,
            line: "error: usage: presets file /nonexistent.json: does not exist"
        ),
        Failure(arguments: ["probe", "/nonexistent/in.mov"], status: 1, line: "error: input_not_found:"),
        Failure(arguments: ["frobnicate"], status: 64, line: "error: usage: Unexpected argument 'frobnicate'"),
    ]

    @Test(arguments: failures)
    func failuresSayWhatAndExitWithTheirCode(_ test: Failure) async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("cli-error") { directory in
            let arguments = test.arguments.map { $0 == "INPUT" ? input : $0 == "OUT" ? directory.file("out.mp4") : $0 }
            let result = try await Jobctl.run(arguments)
            #expect(result.status == test.status, "\(test): exit \(result.status), stderr \(result.stderr)")
            #expect(result.stderr.contains(test.line), "\(test): \(result.stderr)")
            #expect(
                result.stderr.hasPrefix("error: ") && result.stderr.split(separator: "\n").count == 1,
                "one line `error: CODE: message`: \(result.stderr)"
            )
            #expect(result.stdout.isEmpty)
            #expect(directory.contents().isEmpty)
        }
    }

    @Test func customPresetsFromFlagAndEnvironment() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("custom") { directory in
            let file = directory.file("presets.json")
            try Data(
                """
                [{"name": "thumb", "summary": "tiny", "format": "mp4",
                  "video": {"codec": "h264", "maxWidth": 160, "maxHeight": 90, "crf": 30, "encoderPreset": "ultrafast"},
                  "audio": null}]
                """.utf8
            ).write(to: URL(fileURLWithPath: file))
            let output = directory.file("thumb.mp4")
            let viaFlag = try await Jobctl.run(["export", input, "--preset", "thumb", "--presets", file, "-o", output])
            #expect(viaFlag.status == 0, "\(viaFlag.stderr)")
            let probe = try await FFProbe.probe(output)
            #expect(probe.video?.width == 120 && probe.video?.height == 90 && probe.audio.isEmpty)
            let listed = try await Jobctl.run(["presets", "--json"], environment: ["JOBCTL_PRESETS": file])
            let names = try #require(try Jobctl.json(listed) as? [[String: Any]]).compactMap { $0["name"] as? String }
            #expect(names.last == "thumb")
            let command = try #require(try Jobctl.json(listed) as? [[String: Any]]).last?["ffmpeg"] as? String
            #expect(command?.contains("-preset ultrafast") == true && command?.contains("-an") == true)
        }
    }

    /// On a terminal, export draws a progress bar on stderr (`script` gives it a pseudo-TTY).
    @Test func progressBarOnATerminal() async throws {
        let input = try await Fixtures.shared.path(.long)
        try await withTemporaryDirectory("tty") { directory in
            let command =
                "'\(Jobctl.path)' export '\(input)' --preset low --range 0+12s -o '\(directory.file("out.mp4"))'"
            let result = try await ProcessRunner.run("script", ["-qec", command, "/dev/null"])
            #expect(result.status == 0, "\(result.stderr)")
            let screen = result.stdoutText
            #expect(screen.contains("%]") || screen.contains("%  "), "no progress bar in \(screen.debugDescription)")
            #expect(screen.contains("\r"))
            #expect(screen.contains("out.mp4: 12.000 s"))
        }
    }

    @Test func sampleWritesAClipThatExports() async throws {
        try await withTemporaryDirectory("sample") { directory in
            let sample = try await Jobctl.run(["sample", "talk.mp4", "--seconds", "3"], in: directory.path)
            #expect(sample.status == 0, "\(sample.stderr)")
            let probe = try await FFProbe.probe(directory.file("talk.mp4"))
            #expect(
                probe.video?.width == 640 && abs((probe.format.durationSeconds ?? 0) - 3) < 0.05
                    && probe.audio.count == 1
            )
            #expect(try await FFProbe.decodeErrors(directory.file("talk.mp4")) == "")
        }
    }

    /// mp4 output has its index at the front (AVFoundation's shouldOptimizeForNetworkUse), and
    /// variable frame rate stays variable (no frames duplicated or dropped to a fixed rate).
    @Test func fastStartAndVariableFrameRate() async throws {
        let input = try await Fixtures.shared.path(.vfr)
        try await withTemporaryDirectory("faststart") { directory in
            let output = directory.file("out.mp4")
            #expect(try await Jobctl.run(["export", input, "--preset", "low", "-o", output]).status == 0)
            let data = try Data(contentsOf: URL(fileURLWithPath: output))
            let moov = try #require(data.range(of: Data("moov".utf8))?.lowerBound)
            let mdat = try #require(data.range(of: Data("mdat".utf8))?.lowerBound)
            #expect(moov < mdat, "the index (moov) is after the media data")
            let times = try await FFProbe.videoFrameTimes(output)
            let gaps = Set(zip(times, times.dropFirst()).map { (($1 - $0) * 1000).rounded() })
            #expect(gaps == [20, 40], "frame intervals \(gaps) ms: expected 40 ms (25 fps) then 20 ms (50 fps)")
            #expect(times.count == 150)
        }
    }

    @Test(arguments: [["--help"], ["export", "--help"], ["probe", "--help"], ["presets", "--help"], ["--version"]])
    func helpExplains(arguments: [String]) async throws {
        let result = try await Jobctl.run(arguments)
        #expect(result.status == 0)
        #expect(!result.stdoutText.isEmpty)
    }

    /// The benchmarks are a binary of their own, not a command of the shipped one.
    @Test func benchIsItsOwnBinary() async throws {
        let shipped = try await Jobctl.run(["bench", "queue"])
        #expect(shipped.status == 64 && shipped.stderr.contains("unexpected arguments: 'bench'"), "\(shipped.stderr)")
        let help = try await JobctlBench.run(["--help"])
        #expect(help.status == 0 && help.stdoutText.contains("queue") && help.stdoutText.contains("webhooks"))
    }

    /// A concurrency the workers would refuse is refused by the benchmark itself (it used to run
    /// and report "only 0 of N jobs completed" as an internal error).
    @Test func benchRefusesAConcurrencyWorkersRefuse() async throws {
        let result = try await JobctlBench.run(["queue", "--concurrency", "128", "--jobs", "10"])
        #expect(result.status == 64 && result.stderr.contains("--concurrency is between 1 and 64"), "\(result.stderr)")
    }

    /// Options that cannot be measured together are refused before anything starts.
    @Test(arguments: [
        (["--backlog", "1000"], "--backlog is measured on PostgreSQL"),
        (["--cold", "--steady", "5s"], "--cold times a drain by itself"),
    ])
    func benchRefusesOptionsThatDoNotGoTogether(arguments: [String], message: String) async throws {
        let result = try await JobctlBench.run(["queue", "--jobs", "10"] + arguments)
        #expect(result.status == 64 && result.stderr.contains(message), "\(result.stderr)")
    }

    /// A small warm drain and a short steady run on SQLite, as JSON: every job completes, and the
    /// document has the figures scripts read.
    @Test func benchQueueMeasuresSQLite() async throws {
        let drain = try await JobctlBench.run([
            "queue", "--jobs", "200", "--workers", "1", "--repeats", "1", "--samples", "5", "--json",
        ])
        #expect(drain.status == 0, "\(drain.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: drain.stdout) as? [String: Any])
        let throughput = try #require((report["throughput"] as? [[String: Any]])?.first)
        #expect((throughput["jobsPerSecond"] as? Double ?? 0) > 0)
        #expect((report["pickup"] as? [String: Any])?["samples"] as? Int == 5)

        let steady = try await JobctlBench.run([
            "queue", "--steady", "2s", "--producers", "2", "--workers", "1", "--repeats", "1", "--json",
        ])
        #expect(steady.status == 0, "\(steady.stderr)")
        let runs = try #require(
            (try JSONSerialization.jsonObject(with: steady.stdout) as? [String: Any])?["steady"] as? [[String: Any]]
        )
        let run = try #require(runs.first)
        #expect((run["submitted"] as? Int ?? 0) > 0)
        #expect((run["completedPerSecond"] as? Double ?? 0) > 0)
    }
}

extension CLITests {
    /// The tests of CLITests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("jobctl command line: timing", .serialized)
    struct Timing {
        /// Ctrl-C: the export is cancelled, exit 130, nothing at the destination.
        @Test func interruptCancelsAndLeavesNothing() async throws {
            let input = try await Fixtures.shared.path(.long)
            try await withTemporaryDirectory("sigint") { directory in
                // Its exit is noted by its own reaper thread, not by polling from a busy test scheduler.
                let process = try ChildProcess(
                    Jobctl.path,
                    ["export", input, "--preset", "highest", "-o", directory.file("out.mp4")]
                )
                // Interrupted mid-encode: once its staged file has bytes in it.
                let encoding = await eventually(within: .seconds(30)) {
                    directory.contents().contains { name in
                        name.hasSuffix(".tmp")
                            && ((try? FileManager.default.attributesOfItem(atPath: directory.file(name)))?[.size]
                                as? Int
                                ?? 0) > 0
                    }
                }
                try #require(encoding, "no staged file: \(directory.contents())")
                let exited = try #require(await process.stop(with: SIGINT), "jobctl did not exit")
                #expect(exited.took < .seconds(2), "exit took \(exited.took)")
                #expect(exited.status == 130)
                #expect(directory.contents().isEmpty, "left \(directory.contents())")
            }
        }
    }
}
