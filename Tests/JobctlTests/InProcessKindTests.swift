import Foundation
import MediaTestKit
import Testing

/// Issue 43: `jobctl thumbnails|storyboard|waveform|hls` take their options through their kind,
/// so the command, `submit` with the same flags and `submit --options` (the API's request)
/// refuse the same things with the same words, and run the same work. Each test holds a rule
/// that once lived in a command and in its kind apart.
@Suite("In-process commands go through their kind", .timeLimit(.minutes(3)))
struct InProcessKindTests {
    /// `error: CODE: MESSAGE`, a usage error's `(see jobctl … --help)` left off.
    static func refusal(_ result: ProcessResult) -> (code: String, message: String) {
        var line = result.stderr.trimmingCharacters(in: .newlines)
        if line.hasSuffix(" --help)"), let see = line.range(of: " (see jobctl ", options: .backwards) {
            line = String(line[..<see.lowerBound])
        }
        let parts = line.dropFirst("error: ".count).split(separator: ": ", maxSplits: 1)
        return (parts.first.map(String.init) ?? "", parts.dropFirst().first.map(String.init) ?? "")
    }

    /// The same request as the command's flags, `submit`'s flags and `submit --options`: the
    /// same message, exit 64 each; the flags' refusal is a usage error, the JSON's the API's
    /// `invalid_request`.
    func expectOneRefusal(
        command: [String],
        submitFlags: [String],
        options: String,
        kind: String,
        input: String,
        in directory: TemporaryDirectory
    ) async throws -> String {
        let submit = [
            "submit", input, "--db", directory.file("jobs.sqlite"), "--kind", kind, "-o", directory.file("q"),
        ]
        let here = try await Jobctl.run(command)
        let flags = try await Jobctl.run(submit + submitFlags)
        let json = try await Jobctl.run(submit + ["--options", options])
        #expect(
            [here.status, flags.status, json.status] == [64, 64, 64],
            "\(here.stderr)\(flags.stderr)\(json.stderr)"
        )
        #expect(Self.refusal(here).code == "usage" && Self.refusal(flags).code == "usage", "\(here.stderr)")
        #expect(Self.refusal(json).code == "invalid_request", "\(json.stderr)")
        #expect(Self.refusal(here).message == Self.refusal(json).message, "\(here.stderr)\(json.stderr)")
        #expect(Self.refusal(flags).message == Self.refusal(json).message, "\(flags.stderr)\(json.stderr)")
        return Self.refusal(json).message
    }

    /// `--exact` with `--tolerance`, and a time `--at` cannot read: the command once worded
    /// both itself ("--exact and --tolerance are alternatives", no flag before a bad time).
    @Test func thumbnailsRefuseAsTheirKind() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("kind-thumbnails") { directory in
            let both = try await expectOneRefusal(
                command: ["thumbnails", input, "--exact", "--tolerance", "1s", "-o", directory.file("t")],
                submitFlags: ["--exact", "--tolerance", "1s"],
                options: #"{"exact": true, "tolerance": "1s"}"#,
                kind: "thumbnails",
                input: input,
                in: directory
            )
            #expect(both == "--tolerance and --exact are alternatives: give one")
            let time = try await expectOneRefusal(
                command: ["thumbnails", input, "--at", "1s,soon", "-o", directory.file("t")],
                submitFlags: ["--at", "1s,soon"],
                options: #"{"at": "1s,soon"}"#,
                kind: "thumbnails",
                input: input,
                in: directory
            )
            #expect(time.hasPrefix("--at: invalid times '1s,soon'"), "\(time)")
            #expect(directory.contents() == [], "something was written or queued: \(directory.contents())")
        }
    }

    /// `#` before a colour is the kind's to drop, once: `##3A6EA5` was refused by the command
    /// (its renderer dropped one `#`) and queued by `--options` (the kind dropped one, the
    /// renderer the other). A picture too large to make is `limit_exceeded` from both (the
    /// command once tried to allocate it: `encode_failed`), and `#RRGGBB` draws what `RRGGBB` does.
    @Test func waveformReadsColoursAndSizesAsItsKind() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("kind-waveform") { directory in
            let colour = try await expectOneRefusal(
                command: ["waveform", input, "--png", directory.file("w.png"), "--color", "##3A6EA5"],
                submitFlags: ["--files", "png", "--color", "##3A6EA5"],
                options: ###"{"files": "png", "color": "##3A6EA5"}"###,
                kind: "waveform",
                input: input,
                in: directory
            )
            #expect(colour == "--color is a colour as RRGGBB, e.g. 3A6EA5")

            let large = ["--width", "16384", "--height", "16384"]
            let here = try await Jobctl.run(["waveform", input, "--png", directory.file("w.png")] + large)
            let queued = try await Jobctl.run(
                ["submit", input, "--db", directory.file("jobs.sqlite"), "--kind", "waveform", "--files", "png"]
                    + large + ["-o", directory.file("q")]
            )
            #expect(here.status == 1 && queued.status == 1, "\(here.stderr)\(queued.stderr)")
            #expect(here.stderr == queued.stderr && here.stderr.hasPrefix("error: limit_exceeded: a 16384x16384"))
            #expect(directory.contents() == [], "something was written or queued: \(directory.contents())")

            var pictures: [Data] = []
            for (name, color) in [("hash.png", "#C0FFEE"), ("bare.png", "C0FFEE")] {
                let drawn = try await Jobctl.run(
                    [
                        "waveform", input, "--png", directory.file(name), "--color", color, "--width", "200",
                        "--height", "50",
                    ]
                )
                #expect(drawn.status == 0, "\(drawn.stderr)")
                pictures.append(try Data(contentsOf: URL(fileURLWithPath: directory.file(name))))
            }
            #expect(pictures.count == 2 && pictures[0] == pictures[1] && !pictures[0].isEmpty)
        }
    }

    /// The command's options are the kind's, defaults included: `jobctl storyboard` writes,
    /// byte for byte, the files a worker writes for `submit --kind storyboard` with its flags.
    @Test func storyboardWritesWhatAWorkerWrites() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("kind-storyboard") { directory in
            let db = directory.file("jobs.sqlite")
            let flags = ["--tiles", "6", "--columns", "4", "--tile-size", "96x", "--format", "png"]
            let here = try await Jobctl.run(["storyboard", input, "-o", directory.file("here")] + flags)
            #expect(here.status == 0, "\(here.stderr)")
            let submitted = try await Jobctl.run(
                ["submit", input, "--db", db, "--kind", "storyboard", "-o", directory.file("queued")] + flags
            )
            #expect(submitted.status == 0, "\(submitted.stderr)")
            let worker = try await Jobctl.run(["worker", "--db", db, "--once", "--name", "w"])
            #expect(worker.status == 0, "\(worker.stderr)")
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.file("here")).sorted()
            #expect(names == ["storyboard.json", "storyboard.png", "storyboard.vtt"])
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.file("queued")).sorted() == names)
            for name in names {
                let written = try Data(contentsOf: URL(fileURLWithPath: directory.file("here/\(name)")))
                let queued = try Data(contentsOf: URL(fileURLWithPath: directory.file("queued/\(name)")))
                #expect(written == queued, "\(name) differs")
            }
        }
    }

    /// A ladder the rung table lacks: the command and `submit` say it in the kind's words, with
    /// its code. (`submit` exits 1 where the command exits 64: `submit` counts a ladder's
    /// refusal as found in the media; the code and the words are one.)
    @Test func hlsRefusesALadderAsItsKind() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("kind-hls") { directory in
            let here = try await Jobctl.run(["hls", input, "--ladder", "4k", "-o", directory.file("h")])
            let queued = try await Jobctl.run(
                ["submit", input, "--db", directory.file("jobs.sqlite"), "--kind", "hls", "--ladder", "4k"]
                    + ["-o", directory.file("q")]
            )
            #expect(here.status == 64, "\(here.stderr)")
            #expect(queued.status != 0, "\(queued.stderr)")
            #expect(here.stderr == queued.stderr, "\(here.stderr)\(queued.stderr)")
            #expect(here.stderr.hasPrefix("error: invalid_request: --ladder: unknown rung '4k'"), "\(here.stderr)")
        }
    }
}
