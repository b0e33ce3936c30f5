import Foundation
import MediaTestKit
import Queue
import Streaming
import Testing

/// A ladder split across worker processes (issue 29): each chunk's worker encodes every video
/// rendition of its span into a shared scratch directory, and the parent's join publishes one
/// ladder that ffprobe and ffmpeg cannot tell from the one-process ladder of the same input.
@Suite("HLS ladders split across workers", .serialized, .timeLimit(.minutes(8)))
struct LadderSplitTests {
    typealias Setup = RemoteMediaTests.Setup

    static func extinfs(_ path: String) throws -> [Double] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst("#EXTINF:".count).split(separator: ",")[0]) }
    }

    /// Every video packet's presentation time and key flag, read through the media playlist.
    static func packets(_ playlist: String) async throws -> [String] {
        let probed = try await ProcessRunner.check(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                playlist,
            ]
        )
        return probed.stdoutText.split(separator: "\n").map(String.init)
    }

    /// `output` has the one-process ladder's EXTINFs (234p and audio), pictures and keyframe
    /// times, and decodes cleanly.
    static func expectOneProcessLadder(
        _ output: String,
        of input: String,
        range: String?,
        rendition: String,
        in setup: Setup,
        compareDecodeLogs: Bool = true
    ) async throws {
        let whole = setup.directory.file("whole-\(UUID().uuidString.prefix(6))")
        let made = try await Jobctl.run(["hls", input, "-o", whole] + (range.map { ["--range", $0] } ?? []))
        try #require(made.status == 0, "\(made.stderr)")
        for name in [rendition, "audio"] {
            let split = try Self.extinfs("\(output)/\(name).m3u8")
            let one = try Self.extinfs("\(whole)/\(name).m3u8")
            #expect(
                split.count == one.count && zip(split, one).allSatisfy { abs($0 - $1) < 0.001 },
                "\(name): \(split) against \(one)"
            )
        }
        let splitPackets = try await Self.packets("\(output)/\(rendition).m3u8")
        let onePackets = try await Self.packets("\(whole)/\(rendition).m3u8")
        #expect(splitPackets.count == onePackets.count, "\(splitPackets.count) against \(onePackets.count)")
        let keys = { (packets: [String]) in packets.filter { $0.contains(",K") } }
        #expect(
            !keys(splitPackets).isEmpty && keys(splitPackets) == keys(onePackets),
            "\(keys(splitPackets)) against \(keys(onePackets))"
        )
        // ffmpeg decodes both alike: the split ladder adds nothing to what it says of the
        // one-process ladder (clean for most inputs; after a range that starts inside a frame,
        // or at a variable frame rate, the CLI's null muxer says once that two packets share a
        // tick, for both: not looked into yet). A seam whose decode times overlap shows here.
        func decode(_ directory: String) async throws -> String {
            let decoded = try await ProcessRunner.run(
                "ffmpeg",
                ["-v", "error", "-xerror", "-i", "\(directory)/master.m3u8", "-f", "null", "-"]
            )
            #expect(decoded.status == 0, "\(decoded.stderr)")
            return decoded.stderr.replacingOccurrences(of: "0x[0-9a-f]+", with: "0x", options: .regularExpression)
        }
        let (splitLog, oneLog) = (try await decode(output), try await decode(whole))
        // (Two encodes of a ladder made whole differ in their bytes, x264's threads being what
        // they are, and so may the CLI's one remark: compared only where chunks were joined.)
        if compareDecodeLogs { #expect(splitLog == oneLog, "split: \(splitLog) one process: \(oneLog)") }
        #expect(splitLog.components(separatedBy: "\n").filter { !$0.isEmpty }.count <= 1, "\(splitLog)")
    }

    /// `name` in the setup's directory: 320x180 25 fps pictures of `picture` seconds and a
    /// sine of `sound` seconds.
    static func clip(_ setup: Setup, _ name: String, picture: Double, sound: Double) async throws -> String {
        let input = setup.directory.file(name)
        _ = try await ProcessRunner.check(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=\(picture)", "-f", "lavfi", "-i",
                "sine=f=440:r=48000:d=\(sound)", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", input,
            ]
        )
        return input
    }

    @Test func aRangeWithALostSegmentMakesTheOneProcessLadder() async throws {
        let setup = try await Setup("ladder-split-vfr")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Self.clip(setup, "cfr.mp4", picture: 32, sound: 32)
        let output = setup.directory.file("split")
        let id = try await setup.submit(
            input,
            ["--kind", "hls", "--split", "12s", "--range", "1s+28s", "-o", output],
            preset: nil
        )
        let worker = try SplitJobTests.worker(
            setup,
            "A",
            failpoints: "before-join",
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        )
        try #require(
            try await eventually(within: .seconds(120)) { FencingTests.isStopped(worker.pid) },
            "\(worker.log)"
        )
        // One segment of the second chunk is lost before the join reads it.
        let chunk = setup.directory.file("scratch/\(id).split/chunk-00001")
        let lost = try #require(
            try FileManager.default.contentsOfDirectory(atPath: chunk).filter { $0.hasSuffix(".m4s") }.sorted().last
        )
        try FileManager.default.removeItem(atPath: "\(chunk)/\(lost)")
        kill(worker.pid, SIGCONT)
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let warnings = job.result?["hls"]?["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(warnings.contains { $0.contains("chunk 1 was missing") }, "\(warnings)")
        #expect(
            job.result?["hls"]?["report"]?["must"]?.arrayValue?.isEmpty == true,
            "\(String(describing: job.result))"
        )
        try await Self.expectOneProcessLadder(output, of: input, range: "1s+28s", rendition: "180p", in: setup)
        #expect(try await SplitJobTests.children(setup, of: id).count == 2)
    }

    @Test func aVariableFrameRateOrAFirstFrameCutShortIsMadeWholeByOneWorker() async throws {
        let setup = try await Setup("ladder-split-vfr")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        // Every third frame missing: frames of 33 and 67 ms.
        let input = setup.directory.file("vfr.mkv")
        _ = try await ProcessRunner.check(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x180:r=30:d=26", "-f", "lavfi", "-i",
                "sine=f=440:r=48000:d=26", "-vf", "select='not(eq(mod(n\\,3)\\,1))'", "-vsync", "vfr",
                "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", input,
            ]
        )
        let output = setup.directory.file("split")
        let id = try await setup.submit(input, ["--kind", "hls", "--split", "12s", "-o", output], preset: nil)
        _ = try await setup.runWorker()
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        #expect(try await SplitJobTests.children(setup, of: id).isEmpty)
        try await Self.expectOneProcessLadder(
            output,
            of: input,
            range: nil,
            rendition: "180p",
            in: setup,
            compareDecodeLogs: false
        )

        // A constant rate, but a range that starts inside a frame (29.97 fps at 1.01 s).
        let ntsc = setup.directory.file("ntsc.mp4")
        _ = try await ProcessRunner.check(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x180:r=30000/1001:d=26", "-f", "lavfi", "-i",
                "sine=f=440:r=48000:d=26", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest", ntsc,
            ]
        )
        let cut = setup.directory.file("cut")
        let second = try await setup.submit(
            ntsc,
            ["--kind", "hls", "--split", "12s", "--range", "1.01s+24s", "-o", cut],
            preset: nil
        )
        _ = try await setup.runWorker()
        #expect(try await setup.job(second).status == .completed)
        #expect(try await SplitJobTests.children(setup, of: second).isEmpty)
        try await Self.expectOneProcessLadder(
            cut,
            of: ntsc,
            range: "1.01s+24s",
            rendition: "180p",
            in: setup,
            compareDecodeLogs: false
        )
    }

    /// 26 s of pictures and a sound 2.7 s shorter (the join pads it with silence) or 2.7 s longer
    /// (the join encodes the last chunk again, its last picture repeated to the sound's end).
    @Test(arguments: [23.3, 28.7])
    func soundEndingBeforeOrAfterThePictureMakesTheOneProcessLadder(sound: Double) async throws {
        let setup = try await Setup("ladder-split-ends")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Self.clip(setup, "ends.mp4", picture: 26, sound: sound)
        let output = setup.directory.file("split")
        let id = try await setup.submit(input, ["--kind", "hls", "--split", "12s", "-o", output], preset: nil)
        let worker = try SplitJobTests.worker(setup, "A", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        #expect(try await worker.waitForExit(timeout: .seconds(240))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        #expect(try await SplitJobTests.children(setup, of: id).count == 2)
        #expect(
            job.result?["hls"]?["report"]?["must"]?.arrayValue?.isEmpty == true,
            "\(String(describing: job.result))"
        )
        try await Self.expectOneProcessLadder(output, of: input, range: nil, rendition: "180p", in: setup)
    }

    @Test func twoWorkersMakeTheOneProcessLadder() async throws {
        let setup = try await Setup("ladder-split")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = setup.directory.file("talk.mp4")
        _ = try await ProcessRunner.check(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=426x240:r=25:d=26", "-f", "lavfi", "-i",
                "sine=f=440:r=48000:d=26", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest", input,
            ]
        )
        let output = setup.directory.file("split")
        let id = try await setup.submit(input, ["--kind", "hls", "--split", "12s", "-o", output], preset: nil)
        let workers = try ["A", "B"].map {
            try SplitJobTests.worker(setup, $0, secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        }
        for worker in workers {
            #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")
        }
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let children = try await SplitJobTests.children(setup, of: id)
        // 0–12 s and 12–26 s: a last chunk shorter than half a chunk joins the one before.
        #expect(children.count == 2 && children.allSatisfy { $0.status == .completed }, "\(children.map(\.status))")
        #expect(
            job.result?["hls"]?["report"]?["must"]?.arrayValue?.isEmpty == true,
            "\(String(describing: job.result))"
        )

        // The one-process ladder of the same input.
        let whole = setup.directory.file("whole")
        let made = try await Jobctl.run(["hls", input, "-o", whole])
        try #require(made.status == 0, "\(made.stderr)")
        for name in ["234p", "audio"] {
            let split = try Self.extinfs("\(output)/\(name).m3u8")
            let one = try Self.extinfs("\(whole)/\(name).m3u8")
            #expect(
                split.count == one.count && zip(split, one).allSatisfy { abs($0 - $1) < 0.001 },
                "\(name): \(split) against \(one)"
            )
        }
        let splitPackets = try await Self.packets("\(output)/234p.m3u8")
        let onePackets = try await Self.packets("\(whole)/234p.m3u8")
        #expect(splitPackets.count == onePackets.count && splitPackets.count == 650, "\(splitPackets.count)")
        let keys = { (packets: [String]) in packets.filter { $0.hasSuffix("K__") || $0.contains(",K") } }
        // An IDR every 2 s, at the same times on both sides.
        #expect(keys(splitPackets).count == 13, "\(keys(splitPackets))")
        #expect(keys(splitPackets) == keys(onePackets), "\(keys(splitPackets)) against \(keys(onePackets))")
        let decoded = try await ProcessRunner.run(
            "ffmpeg",
            ["-v", "error", "-xerror", "-i", "\(output)/master.m3u8", "-f", "null", "-"]
        )
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
        // The chunks are gone from the scratch directory once the ladder is shown.
        let scratch = setup.directory.file("scratch")
        #expect(await eventually(within: .seconds(30)) { setup.directoryContents(scratch).isEmpty })
    }
}
