import Foundation
import MediaTestKit
import Queue
import Testing

/// `hls` jobs (issue 29) run by real worker processes: the ladder a queued job writes, and a
/// worker killed with its whole ladder staged, whose successor shows one whole ladder.
@Suite("HLS ladder jobs", .serialized, .timeLimit(.minutes(6)))
struct LadderJobTests {
    typealias Setup = RemoteMediaTests.Setup

    @Test func aKilledWorkersLadderIsNeverHalfShownAndTheNextAttemptPublishesAWholeOne() async throws {
        let setup = try await Setup("ladder-killed")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let output = setup.directory.file("talk-hls")
        let id = try await setup.submit(
            try await Fixtures.shared.path(.basic),
            ["--kind", "hls", "--ladder", "234p", "-o", output],
            preset: nil
        )
        let a = try FencingTests.worker(setup, "A", failpoints: "before-rename", once: true)
        try #require(
            await eventually(within: .seconds(60)) { FencingTests.isStopped(a.pid) },
            "A never reached its rename: \(a.log)"
        )
        // Everything is written, and nothing is shown: hidden temporaries of attempt 1 only.
        let hidden = setup.directoryContents(output)
        #expect(
            hidden.count > 5
                && hidden.allSatisfy { $0.hasPrefix(".") && $0.contains(".\(id)-1-") && $0.hasSuffix(".jobctl.tmp") },
            "\(hidden)"
        )
        a.signal(SIGKILL)
        let job = try await FencingTests.takeOver(setup, id, name: "B")
        #expect(job.status == .completed && job.attempt == 2, "\(job.error?.message ?? "")")
        let shown = setup.directoryContents(output)
        #expect(!shown.contains { $0.hasPrefix(".") }, "a killed attempt's leftovers: \(shown)")
        #expect(
            [
                "master.m3u8", "manifest.mpd", "player.html", "234p.m3u8", "234p-iframes.m3u8", "234p-init.mp4",
                "audio.m3u8", "audio-init.mp4",
            ].allSatisfy(shown.contains),
            "\(shown)"
        )
        // The result lists every file, master.m3u8 last, and the ladder's report.
        let files = job.result?["files"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(files.last == "master.m3u8" && Set(files) == Set(shown), "\(files)")
        #expect(job.result?["hls"]?["report"]?["must"]?.arrayValue?.isEmpty == true)
        #expect(job.result?["hls"]?["renditions"]?.arrayValue?.count == 1)
        let decoded = try await ProcessRunner.run(
            "ffmpeg",
            ["-v", "error", "-xerror", "-i", "\(output)/master.m3u8", "-f", "null", "-"]
        )
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
    }

    @Test func aLadderOfThePresetsFileIsStoredWithTheJobSoWorkersNeedNoPresetsFile() async throws {
        let setup = try await Setup("ladder-custom")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let presets = setup.directory.file("ladders.json")
        try Data(
            #"[{"name": "phones", "ladder": [{"name": "small", "short_side": 120, "bitrate": 150000}, {"name": "big", "short_side": 240, "bitrate": 400000}]}]"#
                .utf8
        ).write(to: URL(fileURLWithPath: presets))
        let output = setup.directory.file("phones")
        let id = try await setup.submit(
            try await Fixtures.shared.path(.basic),
            ["--kind", "hls", "--presets", presets, "--ladder", "phones", "-o", output],
            preset: nil
        )
        try FileManager.default.removeItem(atPath: presets)
        _ = try await setup.runWorker()
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let renditions = job.result?["hls"]?["renditions"]?.arrayValue ?? []
        #expect(
            renditions.map {
                "\($0["name"]?.stringValue ?? "") \($0["width"]?.doubleValue ?? 0)x\($0["height"]?.doubleValue ?? 0)"
            }
                == ["small 160.0x120.0", "big 320.0x240.0"],
            "\(renditions)"
        )
        #expect(["small.m3u8", "big-init.mp4", "master.m3u8"].allSatisfy(setup.directoryContents(output).contains))
    }

    @Test func aBadLadderIsRefusedAtSubmitNamingTheRungs() async throws {
        let setup = try await Setup("ladder-refused")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let refused = try await Jobctl.run(
            ["submit", try await Fixtures.shared.path(.basic), "--db", setup.db, "--kind", "hls", "--ladder", "4k"]
        )
        // A usage error, as `jobctl hls --ladder 4k` and every `invalid_request` of submit.
        #expect(refused.status == 64, "\(refused.stderr)")
        #expect(refused.stderr.contains("unknown rung '4k'") && refused.stderr.contains("1080p"), "\(refused.stderr)")
    }
}
