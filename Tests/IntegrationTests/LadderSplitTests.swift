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
        try await Task.sleep(for: .milliseconds(300))
        #expect(setup.directoryContents(setup.directory.file("scratch")).isEmpty)
    }
}
