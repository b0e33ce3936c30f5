import Foundation
import JobctlCore
import Media
import MediaTestKit
import Streaming
import Testing

/// `LadderSession` (issue 29) on generated clips, its output held to ffprobe and ffmpeg (keyframe
/// times, sizes, codec tags, clean decodes through the master playlist and the MPD), to the
/// `m3u8` parser from PyPI, and to headless Chromium playing `player.html`.
@Suite("HLS/CMAF ladders", .serialized)
struct LadderSessionTests {
    /// Makes `name` in `directory` with the ffmpeg CLI from `arguments` (lavfi sources).
    static func clip(_ directory: TemporaryDirectory, _ name: String, _ arguments: [String]) async throws -> String {
        let path = directory.file(name)
        _ = try await ProcessRunner.check("ffmpeg", ["-v", "error", "-y"] + arguments + [path])
        return path
    }

    static func ladder(
        _ input: String,
        into output: String,
        _ options: LadderOptions = LadderOptions(),
        range: TimeRange = .all
    ) throws -> LadderResult {
        let session = try LadderSession(asset: try Asset(location: input), options: options, timeRange: range)
        return try session.run(directory: output)
    }

    /// Every packet of a rendition as ffprobe reads it from its init segment and segments put
    /// end to end: (pts seconds, keyframe), and where each segment's first packet is.
    static func packets(
        _ directory: String,
        _ name: String,
        segments: Int
    ) async throws -> (
        packets: [(time: Double, key: Bool)], segmentStarts: [Int], width: Int, height: Int, tag: String
    ) {
        var joined = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)-init.mp4"))
        var offsets: [Int] = []
        for index in 1...segments {
            offsets.append(joined.count)
            joined.append(
                try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)-\(String(format: "%05d", index)).m4s"))
            )
        }
        let whole = "\(directory)/.\(name)-whole.mp4"
        try joined.write(to: URL(fileURLWithPath: whole))
        defer { try? FileManager.default.removeItem(atPath: whole) }
        let probed = try await ProcessRunner.check(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "0", "-show_entries", "packet=pts_time,flags,pos", "-of", "csv=p=0",
                whole,
            ]
        )
        var packets: [(Double, Bool)] = []
        var starts: [Int] = []
        for line in probed.stdoutText.split(separator: "\n") {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count >= 3, let time = Double(fields[0]), let position = Int(fields[1]) else { continue }
            // The first packet whose bytes lie past a segment's start begins that segment.
            if starts.count < offsets.count, position >= offsets[starts.count] { starts.append(packets.count) }
            packets.append((time, fields[2].hasPrefix("K")))
        }
        let stream = try await ProcessRunner.check(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=width,height,codec_tag_string", "-of", "csv=p=0", whole]
        )
        let parts = stream.stdoutText.split(separator: "\n")[0].split(separator: ",")
        // ffprobe prints the tag before the size, whatever the order asked.
        return (packets, starts, Int(parts[1]) ?? 0, Int(parts[2]) ?? 0, String(parts[0]))
    }

    /// ffmpeg decodes `entry` (a playlist or the MPD) to the end with no error.
    static func decodes(_ directory: String, _ entry: String) async throws {
        let decoded = try await ProcessRunner.run(
            "ffmpeg",
            ["-v", "error", "-xerror", "-i", "\(directory)/\(entry)", "-f", "null", "-"]
        )
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(entry): \(decoded.stderr)")
    }

    /// The keyframe times of every video rendition: identical (≤ 1 ms), each segment starting
    /// with one, pictures the size the result says.
    static func checkKeyframes(_ result: LadderResult, in directory: String, tag: String = "avc1") async throws {
        var reference: [Double]?
        for rendition in result.renditions {
            let probed = try await packets(directory, rendition.name, segments: rendition.segments)
            #expect(probed.width == rendition.width && probed.height == rendition.height, "\(rendition.name)")
            #expect(probed.tag == tag, "\(rendition.name): \(probed.tag)")
            #expect(probed.segmentStarts.count == rendition.segments)
            for start in probed.segmentStarts {
                #expect(probed.packets[start].key, "\(rendition.name): a segment starts with a non-key packet")
            }
            let keys = probed.packets.filter(\.key).map(\.time).sorted()
            if let reference {
                #expect(
                    keys.count == reference.count && zip(keys, reference).allSatisfy { abs($0 - $1) <= 0.001 },
                    "\(rendition.name): keyframes at \(keys), others at \(reference)"
                )
            } else {
                reference = keys
            }
        }
    }

    @Test("a 360p30 clip with audio: two rungs, aligned IDRs, clean rules, decodable, plays in Chromium")
    func ladder() async throws {
        try await withTemporaryDirectory("ladder") { directory in
            let input = try await Self.clip(
                directory,
                "talk.mp4",
                [
                    "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=13", "-f", "lavfi", "-i", "sine=f=440:r=44100:d=13",
                    "-ac", "2", "-c:v", "libx264", "-c:a", "aac", "-shortest",
                ]
            )
            let output = directory.file("out")
            let result = try Self.ladder(input, into: output)
            #expect(result.renditions.map(\.name) == ["234p", "360p"])
            #expect(result.dropped == ["432p", "480p", "540p", "720p", "1080p"])
            #expect(result.report.must.isEmpty && result.report.should.isEmpty, "\(result.report)")
            #expect(result.audio?.channels == 2 && result.audio?.sample_rate == 44100)
            #expect(result.files?.last?.name == "master.m3u8", "the master playlist is shown last")
            // Every rendition has segments of about 6 s: 6, 6, 1.
            #expect(result.renditions.allSatisfy { $0.segments == 3 })
            try await Self.checkKeyframes(result, in: output)
            for rendition in result.renditions {
                #expect(
                    rendition.bandwidth >= rendition.measured_peak
                        && Double(rendition.bandwidth) <= Double(rendition.measured_peak) * 1.10
                )
            }
            for entry in ["master.m3u8", "234p.m3u8", "360p.m3u8", "audio.m3u8", "manifest.mpd"] {
                try await Self.decodes(output, entry)
            }
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: output).filter { $0.hasPrefix(".") }
            #expect(leftovers.isEmpty, "\(leftovers)")
            // A real browser plays it, and the m3u8 parser reads every playlist.
            let played = try await ProcessRunner.run("scripts/browser-play.sh", [output])
            #expect(played.status == 0, "\(played.stdoutText) \(played.stderr)")
            #expect(played.stdoutText.contains(#""ok": true"#))
        }
    }

    @Test(
        "hostile and unlucky inputs: audio only, no audio, odd size with SAR, rotation, VFR, 60 fps, a range, a tiny picture"
    )
    func inputs() async throws {
        try await withTemporaryDirectory("ladder-inputs") { directory in
            // Audio only: an audio-only ladder that ffmpeg decodes through its master playlist.
            let sound = try await Self.clip(
                directory,
                "sound.m4a",
                ["-f", "lavfi", "-i", "sine=f=440:r=48000:d=7", "-c:a", "aac"]
            )
            let audioOnly = try Self.ladder(sound, into: directory.file("sound"))
            #expect(audioOnly.renditions.isEmpty && audioOnly.audio != nil && audioOnly.report.must.isEmpty)
            try await Self.decodes(directory.file("sound"), "master.m3u8")

            // No audio: no audio group.
            let silent = try await Self.clip(
                directory,
                "silent.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=5", "-c:v", "libx264"]
            )
            let noAudio = try Self.ladder(silent, into: directory.file("silent"))
            #expect(noAudio.audio == nil && noAudio.renditions.map(\.name) == ["234p"], "\(noAudio.renditions)")
            let master = try String(contentsOfFile: directory.file("silent/master.m3u8"), encoding: .utf8)
            #expect(!master.contains("TYPE=AUDIO") && master.contains("RESOLUTION=312x234"))
            try await Self.decodes(directory.file("silent"), "master.m3u8")

            // Odd size, anamorphic (SAR 4:3): the display shape kept in square pixels, even sizes.
            let odd = try await Self.clip(
                directory,
                "odd.mkv",
                [
                    "-f", "lavfi", "-i", "testsrc2=s=641x359:r=25:d=5", "-vf", "setsar=4/3", "-c:v", "libx264",
                    "-pix_fmt", "yuv444p",
                ]
            )
            let anamorphic = try Self.ladder(odd, into: directory.file("odd"))
            #expect(anamorphic.renditions.map { "\($0.width)x\($0.height)" } == ["558x234"], "\(anamorphic.renditions)")
            try await Self.checkKeyframes(anamorphic, in: directory.file("odd"))

            // Rotation: a phone's portrait video is a portrait ladder.
            let turned = try await Fixtures.shared.path(.rotated)
            let portrait = try Self.ladder(turned, into: directory.file("turned"))
            #expect(
                !portrait.renditions.isEmpty && portrait.renditions.allSatisfy { $0.width < $0.height },
                "\(portrait.renditions)"
            )
            try await Self.checkKeyframes(portrait, in: directory.file("turned"))

            // Variable frame rate: every third frame missing.
            let variable = try await Self.clip(
                directory,
                "vfr.mkv",
                [
                    "-f", "lavfi", "-i", "testsrc2=s=426x240:r=30:d=9", "-vf", "select='not(eq(mod(n\\,3)\\,1))'",
                    "-vsync", "vfr", "-c:v", "libx264",
                ]
            )
            let vfr = try Self.ladder(variable, into: directory.file("vfr"))
            #expect(vfr.report.must.isEmpty, "\(vfr.report)")
            try await Self.checkKeyframes(vfr, in: directory.file("vfr"))
            try await Self.decodes(directory.file("vfr"), "master.m3u8")

            // 60 fps: the ≤ 30 fps rungs drop every other frame, their keyframes where the others' are.
            let fast = try await Self.clip(
                directory,
                "fast.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=854x480:r=60:d=5", "-c:v", "libx264", "-preset", "ultrafast"]
            )
            let sixty = try Self.ladder(fast, into: directory.file("fast"), LadderOptions(ladder: "360p,480p"))
            #expect(sixty.renditions.map(\.frame_rate) == [30, 60], "\(sixty.renditions)")
            try await Self.checkKeyframes(sixty, in: directory.file("fast"))
            let counts = try await sixty.renditions.asyncMap { rendition in
                try await Self.packets(directory.file("fast"), rendition.name, segments: rendition.segments).packets
                    .count
            }
            #expect(counts == [150, 300], "\(counts)")

            // A range: 2 s from 1.5 s.
            let ranged = try Self.ladder(
                silent,
                into: directory.file("range"),
                range: try TimeRange(parsing: "1.5s+2s")
            )
            #expect(abs(ranged.duration - 2) < 0.05, "\(ranged.duration)")

            // Smaller than every rung: one rendition at its own size.
            let tiny = try await Self.clip(
                directory,
                "tiny.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=3", "-c:v", "libx264"]
            )
            let small = try Self.ladder(tiny, into: directory.file("tiny"))
            #expect(small.renditions.map { "\($0.name) \($0.width)x\($0.height)" } == ["90p 160x90"])
        }
    }

    @Test("an HEVC ladder: hvc1 in fMP4, CODECS from hvcC, aligned IDRs, decodable through the master playlist")
    func hevc() async throws {
        try await withTemporaryDirectory("ladder-hevc") { directory in
            let input = try await Self.clip(
                directory,
                "wide.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=960x540:r=25:d=7", "-c:v", "libx264", "-preset", "ultrafast"]
            )
            let output = directory.file("out")
            let result = try Self.ladder(input, into: output, LadderOptions(ladder: "auto", codec: .hevc))
            #expect(result.renditions.map(\.name) == ["360p", "432p", "540p"], "\(result.renditions)")
            #expect(result.report.must.isEmpty, "\(result.report)")
            #expect(
                result.renditions.allSatisfy { $0.codecs.hasPrefix("hvc1.1.") },
                "\(result.renditions.map(\.codecs))"
            )
            try await Self.checkKeyframes(result, in: output, tag: "hvc1")
            let master = try String(contentsOfFile: "\(output)/master.m3u8", encoding: .utf8)
            #expect(master.contains(#"CODECS="hvc1.1."#), "\(master)")
            try await Self.decodes(output, "master.m3u8")
            try await Self.decodes(output, "manifest.mpd")
        }
    }

    @Test(
        "a person's own files beside a ladder are never removed, the input included; a rerun replaces same-named files and removes none"
    )
    func neighbours() async throws {
        try await withTemporaryDirectory("ladder-neighbours") { directory in
            let output = directory.file("shared")
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let input = try await Self.clip(
                directory,
                "shared/input-init.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=426x240:r=25:d=4", "-c:v", "libx264", "-preset", "ultrafast"]
            )
            for name in ["my.m3u8", "clip.m4s", "notes.txt"] {
                try Data("mine".utf8).write(to: URL(fileURLWithPath: "\(output)/\(name)"))
            }
            _ = try Self.ladder(input, into: output, LadderOptions(ladder: "234p"))
            _ = try Self.ladder(input, into: output + "/", LadderOptions(ladder: "234p"))
            let names = try FileManager.default.contentsOfDirectory(atPath: output)
            #expect(
                ["input-init.mp4", "my.m3u8", "clip.m4s", "notes.txt", "master.m3u8", "234p-00001.m4s"].allSatisfy(
                    names.contains
                ),
                "\(names.sorted())"
            )
            #expect(try String(contentsOfFile: "\(output)/my.m3u8", encoding: .utf8) == "mine")
            #expect(!names.contains { $0.hasPrefix(".") }, "\(names.sorted())")
        }
    }

    @Test("an output directory given as a symbolic link is refused, with or without a trailing slash")
    func linkedDirectory() async throws {
        try await withTemporaryDirectory("ladder-link") { directory in
            let real = directory.file("real")
            try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: directory.file("link"), withDestinationPath: real)
            for path in [directory.file("link"), directory.file("link") + "/", directory.file("link") + "//"] {
                #expect(throws: MediaError.self, "\(path)") { _ = try StagedFiles(directory: path) }
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: real).isEmpty)
        }
    }

    @Test("a one-letter relative output (Foundation's path code trapped on it): a ladder's directory, an export's file")
    func oneLetterDirectory() async throws {
        try await withTemporaryDirectory("ladder-one-letter") { directory in
            let input = try await Self.clip(
                directory,
                "tiny.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=2", "-c:v", "libx264"]
            )
            let made = try await Jobctl.run(["hls", input, "-o", "n"], in: directory.path)
            #expect(made.status == 0, "\(made.stderr)")
            #expect(FileManager.default.fileExists(atPath: directory.file("n/master.m3u8")))
            let exported = try await Jobctl.run(["export", input, "--preset", "low", "-o", "a"], in: directory.path)
            #expect(exported.status == 0, "\(exported.stderr)")
            #expect(FileManager.default.fileExists(atPath: directory.file("a")))
        }
    }

    @Test("--max-output-size stops the encode as soon as the ladder would pass it, and leaves nothing")
    func outputLimit() async throws {
        try await withTemporaryDirectory("ladder-limit") { directory in
            let input = try await Self.clip(
                directory,
                "busy.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=60", "-c:v", "libx264", "-preset", "ultrafast"]
            )
            let asset = try Asset(location: input, limits: ResourceLimits(maxOutputBytes: 50_000))
            let session = try LadderSession(asset: asset, options: LadderOptions(ladder: "360p"))
            let output = directory.file("out")
            let started = ContinuousClock.now
            #expect {
                try session.run(directory: output)
            } throws: { error in
                (error as? MediaError)?.code == .limitExceeded && "\(error)".contains("50000 bytes")
            }
            // Stopped early: not the minute of video a whole encode takes here.
            #expect(session.progress < 0.5, "\(session.progress) after \(ContinuousClock.now - started)")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: output)) ?? []).isEmpty)
        }
    }

    @Test("an unknown rung is refused before anything is read; a cancelled ladder leaves nothing")
    func refusals() async throws {
        try await withTemporaryDirectory("ladder-refusals") { directory in
            let input = try await Self.clip(
                directory,
                "long.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=40", "-c:v", "libx264", "-preset", "ultrafast"]
            )
            #expect(throws: MediaError.self) {
                try LadderSession(asset: try Asset(location: input), options: LadderOptions(ladder: "4k"))
            }
            // x265 cannot encode an 8-pixel picture: refused when planned, naming the way out.
            let speck = try await Self.clip(
                directory,
                "speck.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=8x8:r=25:d=1", "-c:v", "libx264"]
            )
            #expect {
                try LadderSession(asset: try Asset(location: speck), options: LadderOptions(codec: .hevc))
            } throws: { error in
                (error as? MediaError)?.code == .presetIncompatible && "\(error)".contains("--codec h264")
            }
            // Shorter than half a second: the target is still a whole second.
            let blink = try await Self.clip(
                directory,
                "blink.mp4",
                ["-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=0.2", "-c:v", "libx264"]
            )
            _ = try Self.ladder(blink, into: directory.file("blink"))
            let playlist = try String(contentsOfFile: directory.file("blink/180p.m3u8"), encoding: .utf8)
            #expect(playlist.contains("#EXT-X-TARGETDURATION:1\n"), "\(playlist)")
            let session = try LadderSession(asset: try Asset(location: input), options: LadderOptions())
            let output = directory.file("out")
            try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
            let task = Task {
                try await onDedicatedThread("ladder") { () throws(MediaError) in try session.run(directory: output) }
            }
            #expect(await eventually(within: .seconds(60)) { session.progress >= 0.1 }, "the ladder never got going")
            session.cancel()
            await #expect(throws: MediaError.self) { try await task.value }
            #expect(try FileManager.default.contentsOfDirectory(atPath: output).isEmpty)
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var mapped: [T] = []
        for element in self { mapped.append(try await transform(element)) }
        return mapped
    }
}
