import Foundation
import MediaTestKit
import Testing

/// `jobctl thumbnails`, `storyboard` and `waveform` as a user runs them: `--json`, the files
/// (checked with ffprobe), bad inputs with their codes and exit statuses, Ctrl-C.
@Suite("Image and waveform commands", .timeLimit(.minutes(3)))
struct ImageCommandTests {
    @Test func thumbnailsPrintEachImageWithItsTimes() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("thumbs-cli") { directory in
            let output = directory.file("thumbs")
            let result = try await Jobctl.run([
                "thumbnails", input, "--at", "1s,end", "--exact", "--size", "x60", "--format", "png", "-o", output,
                "--json",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let report = try #require(try Jobctl.json(result) as? [String: Any])
            let images = try #require(report["images"] as? [[String: Any]])
            #expect(images.map { $0["name"] as? String } == ["thumb-001.png", "thumb-002.png"])
            #expect(images.map { $0["requestedTime"] as? Double } == [1, 4])
            #expect(images.first?["actualTime"] as? Double == 1)
            for image in images {
                let probe = try await FFProbe.probe(output + "/" + (image["name"] as? String ?? "?"))
                #expect(probe.video?.codec_name == "png" && probe.video?.width == 80 && probe.video?.height == 60)
            }
            // Without --json: one line per image, with its requested and actual time.
            let plain = try await Jobctl.run(["thumbnails", input, "--at", "2s", "-o", directory.file("plain")])
            #expect(
                plain.stdoutText.contains("thumb-001.jpg: 320x240") && plain.stdoutText.contains("requested 2.000 s")
            )
        }
    }

    @Test func storyboardAndWaveformWriteTheirFiles() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("board-cli") { directory in
            let board = try await Jobctl.run([
                "storyboard", input, "--tiles", "6", "--columns", "3", "-o", directory.file("board"), "--json",
            ])
            #expect(board.status == 0, "\(board.stderr)")
            let sprite = try await FFProbe.probe(directory.file("board/storyboard.jpg"))
            #expect(sprite.video?.width == 3 * 256 && sprite.video?.height == 2 * 192)
            let waveform = try await Jobctl.run([
                "waveform", input, "-o", directory.file("peaks.json"), "--dat", directory.file("peaks.dat"), "--png",
                directory.file("wave.png"), "--width", "400", "--height", "100",
            ])
            #expect(waveform.status == 0, "\(waveform.stderr)")
            let picture = try await FFProbe.probe(directory.file("wave.png"))
            #expect(picture.video?.width == 400 && picture.video?.height == 100)
            let dat = try Data(contentsOf: URL(fileURLWithPath: directory.file("peaks.dat")))
            #expect(dat.prefix(4) == Data([1, 0, 0, 0]), "stereo averaged is one channel: version 1")
        }
    }

    @Test func badInputsFailWithTheirCodes() async throws {
        let audioOnly = try await Fixtures.shared.path(.audioOnly)
        let videoOnly = try await Fixtures.shared.path(.videoOnly)
        try await withTemporaryDirectory("image-refusals") { directory in
            let noVideo = try await Jobctl.run(["thumbnails", audioOnly, "-o", directory.file("t")])
            #expect(noVideo.status == 1 && noVideo.stderr.contains("input_unsupported"), "\(noVideo.stderr)")
            let noAudio = try await Jobctl.run(["waveform", videoOnly, "-o", directory.file("p.json")])
            #expect(noAudio.status == 1 && noAudio.stderr.contains("input_unsupported"), "\(noAudio.stderr)")
            try #require(FileManager.default.createFile(atPath: directory.file("a-file"), contents: Data("keep".utf8)))
            let notADirectory = try await Jobctl.run(["storyboard", videoOnly, "-o", directory.file("a-file")])
            #expect(notADirectory.status == 1 && notADirectory.stderr.contains("output_forbidden"))
            #expect(try String(contentsOfFile: directory.file("a-file"), encoding: .utf8) == "keep")
            try FileManager.default.createDirectory(atPath: directory.file("a-dir"), withIntermediateDirectories: true)
            let ontoADirectory = try await Jobctl.run(["waveform", audioOnly, "-o", directory.file("a-dir")])
            #expect(ontoADirectory.status == 1 && ontoADirectory.stderr.contains("output_forbidden"))
            let both = try await Jobctl.run([
                "waveform", audioOnly, "-o", directory.file("p.json"), "--samples-per-pixel", "10",
                "--pixels-per-second", "10",
            ])
            #expect(both.status == 64, "\(both.stderr)")
            // Sizes that would cost gigabytes are refused before any work: a 25600-pixel-wide
            // sprite; 2 samples per pixel over an hour of (declared) audio.
            let wideSprite = try await Jobctl.run([
                "storyboard", videoOnly, "--tiles", "200", "--columns", "100", "-o", directory.file("s"),
            ])
            #expect(wideSprite.status == 1 && wideSprite.stderr.contains("limit_exceeded"), "\(wideSprite.stderr)")
            let lateAudio = try await Fixtures.shared.path(.lateAudio)
            let hugeWaveform = try await Jobctl.run([
                "waveform", lateAudio, "--samples-per-pixel", "2", "-o", directory.file("h.json"),
            ])
            #expect(
                hugeWaveform.status == 1 && hugeWaveform.stderr.contains("limit_exceeded"),
                "\(hugeWaveform.stderr)"
            )
            let missing = try await Jobctl.run(["thumbnails", directory.file("missing.mov"), "-o", directory.file("m")])
            #expect(missing.status == 1 && missing.stderr.contains("input_not_found"), "\(missing.stderr)")
            #expect(
                Set(directory.contents()) == ["a-file", "a-dir"],
                "something was written: \(directory.contents())"
            )
        }
    }

    @Test(arguments: ["thumbnails", "storyboard", "waveform"])
    func helpExplains(command: String) async throws {
        let result = try await Jobctl.run([command, "--help"])
        #expect(result.status == 0 && result.stdoutText.contains("Examples:"))
    }
}

extension ImageCommandTests {
    /// The tests of ImageCommandTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("Image and waveform commands: timing", .serialized)
    struct Timing {
        /// Ctrl-C in the middle of a thousand exact thumbnails: exit 130 within 2 s, no file left,
        /// not even a hidden temporary.
        @Test func interruptLeavesNoImage() async throws {
            let input = try await Fixtures.shared.path(.long)
            try await withTemporaryDirectory("thumbs-sigint") { directory in
                let output = directory.file("thumbs")
                let process = try ChildProcess(
                    Jobctl.path,
                    ["thumbnails", input, "--count", "1000", "--exact", "-o", output]
                )
                func staged() -> Bool {
                    ((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []).contains {
                        $0.hasSuffix(".tmp")
                    }
                }
                _ = await eventually(within: .seconds(60)) { staged() || process.exit != nil }
                try #require(process.exit == nil, "it finished before it could be interrupted")
                let exited = try #require(await process.stop(with: SIGINT), "jobctl did not exit")
                #expect(exited.took < .seconds(2), "exit took \(exited.took)")
                #expect(exited.status == 130)
                let left = (try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []
                #expect(left.isEmpty, "left \(left)")
            }
        }
    }
}
