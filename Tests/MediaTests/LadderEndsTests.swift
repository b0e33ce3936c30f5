import Foundation
import JobctlCore
import Media
import MediaTestKit
import Streaming
import Testing

/// Ladders of real-world shapes (issue 42, items 14 and 10): sound and picture that end (or
/// start) apart, and frame rates that change. Every clip is generated with the ffmpeg CLI; the
/// ladders are held to ffprobe (where each rendition's media ends, how many pictures it has),
/// to ffmpeg (a clean decode through the master playlist, silence where the sound was padded),
/// and two of them to headless Chromium playing to the end.
@Suite("HLS ladders: sound and picture of different lengths, changing frame rates", .serialized)
struct LadderEndsTests {
    struct Variant: CustomTestStringConvertible, Sendable {
        var name: String
        var file: String
        var arguments: [String]
        /// Plays it in Chromium to the end (scripts/browser-play.sh).
        var play = false
        var testDescription: String { name }
    }

    /// A 9 s 30 fps picture and a sine of `sound` seconds; `late` delays one of them.
    static func clip(
        _ name: String,
        sound: Double,
        picture: Double = 9,
        soundLate: Double = 0,
        pictureLate: Double = 0,
        file: String = "clip.mp4",
        play: Bool = false
    ) -> Variant {
        let video = ["-f", "lavfi", "-i", "testsrc2=s=426x240:r=30:d=\(picture)"]
        let audio = ["-f", "lavfi", "-i", "sine=f=440:r=48000:d=\(sound)"]
        return Variant(
            name: name,
            file: file,
            arguments: (pictureLate > 0 ? ["-itsoffset", "\(pictureLate)"] : []) + video
                + (soundLate > 0 ? ["-itsoffset", "\(soundLate)"] : []) + audio
                + ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"],
            play: play
        )
    }

    static let endings: [Variant] = [
        clip("the sound ends 0.05 s before the picture", sound: 8.95),
        clip("the sound ends 1 s before the picture", sound: 8),
        clip("the sound ends 2.7 s before the picture (a picture-only tail)", sound: 6.3, play: true),
        clip("the sound ends 0.05 s after the picture", sound: 9.05),
        clip("the sound ends 1 s after the picture", sound: 10),
        clip("the sound ends 2.7 s after the picture (a sound-only tail)", sound: 11.7),
        clip("the sound starts 0.5 s after the picture", sound: 8.5, soundLate: 0.5),
        clip("the picture starts 0.5 s after the sound", sound: 9, picture: 8.5, pictureLate: 0.5),
        clip("MPEG-TS, the sound 1.2 s short", sound: 7.8, file: "clip.ts"),
        clip("Matroska, the sound 0.4 s long", sound: 9.4, file: "clip.mkv"),
    ]

    /// Where a stream of `path` starts and ends (its packets' earliest pts, latest pts +
    /// duration, seconds), and how many packets it has. A packet without a duration (ffprobe
    /// gives none in a fragmented MP4 put end to end) lasts until the next one shown, the last
    /// one as long as the one before it.
    static func probe(_ path: String, _ stream: String) async throws -> (start: Double, end: Double, packets: Int) {
        let probed = try await ProcessRunner.check(
            "ffprobe",
            [
                "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time,duration_time", "-of",
                "csv=p=0", path,
            ]
        )
        let packets = probed.stdoutText.split(separator: "\n").compactMap { line -> (Double, Double?)? in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard let pts = fields.first.flatMap({ Double($0) }) else { return nil }
            return (pts, fields.count > 1 ? Double(fields[1]) : nil)
        }.sorted { $0.0 < $1.0 }
        guard let first = packets.first else { return (0, 0, 0) }
        var end = 0.0
        for (index, (pts, duration)) in packets.enumerated() {
            let gap =
                index + 1 < packets.count
                ? packets[index + 1].0 - pts : (packets.count > 1 ? pts - packets[index - 1].0 : 0)
            end = max(end, pts + (duration ?? gap))
        }
        return (first.0, end, packets.count)
    }

    /// ffmpeg decodes `entry` to the end with no error, every picture at its own time in the
    /// demuxer's time base (the CLI otherwise counts in 1/r_frame_rate, which it guesses from
    /// the first segment: 15 fps pictures there, and the 30 fps ones later share its ticks,
    /// which its null muxer reports as errors of its own).
    static func decodes(_ directory: String, _ entry: String) async throws {
        let decoded = try await ProcessRunner.run(
            "ffmpeg",
            [
                "-v", "error", "-xerror", "-i", "\(directory)/\(entry)", "-fps_mode", "passthrough", "-enc_time_base",
                "-1", "-f", "null",
                "-",
            ]
        )
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(entry): \(decoded.stderr)")
    }

    /// What a media playlist's EXTINFs add up to (seconds).
    static func declared(_ directory: String, _ name: String) throws -> Double {
        try String(contentsOfFile: "\(directory)/\(name).m3u8", encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst("#EXTINF:".count).split(separator: ",")[0]) }
            .reduce(0, +)
    }

    /// A rendition's initialization segment and segments put end to end, as one file.
    static func joined(_ directory: String, _ name: String, segments: Int) throws -> String {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)-init.mp4"))
        for index in 1...segments {
            bytes.append(
                try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)-\(String(format: "%05d", index)).m4s"))
            )
        }
        let whole = "\(directory)/.\(name)-whole.mp4"
        try bytes.write(to: URL(fileURLWithPath: whole))
        return whole
    }

    /// The loudest sample of the last `seconds` of `path`'s sound, in dB (ffmpeg's volumedetect).
    static func loudestAtEnd(_ path: String, seconds: Double) async throws -> Double {
        let detected = try await ProcessRunner.run(
            "ffmpeg",
            ["-v", "info", "-sseof", "-\(seconds)", "-i", path, "-vn", "-af", "volumedetect", "-f", "null", "-"]
        )
        let line = detected.stderr.split(separator: "\n").first { $0.contains("max_volume:") } ?? ""
        return Double(line.split(separator: " ").dropLast().last ?? "") ?? 0
    }

    /// Holds a ladder to the program: every rendition lasts from the input's first media to where
    /// its later medium ends (within a video frame and an AAC frame), pictures every frame to the
    /// end, silence where the sound was padded, a clean decode, and (when asked) Chromium
    /// playing to the end. Spans, not ends: each rendition starts after its codec's delay (AAC's
    /// priming, x264's reorder delay), as before.
    static func check(_ result: LadderResult, _ output: String, input: String, play: Bool) async throws {
        #expect(result.report.must.isEmpty, "\(result.report)")
        let tolerance = 1.0 / 30 + 1024.0 / 48000
        let picture = try await probe(input, "v:0")
        let sound = try await probe(input, "a:0")
        // The ladder's timeline starts at the input's first media (a transport stream's ~1.4 s;
        // an MP4's AAC priming before 0 is not media).
        let origin = max(0, min(picture.start, sound.start))
        let program = max(picture.end, sound.end) - origin
        guard let rendition = result.renditions.first, let audio = result.audio else {
            Issue.record("no video or audio rendition: \(result.renditions), \(String(describing: result.audio))")
            return
        }
        let video = try Self.joined(output, rendition.name, segments: rendition.segments)
        let sounds = try Self.joined(output, "audio", segments: audio.segments)
        let shownVideo = try await probe(video, "v:0")
        let shownSound = try await probe(sounds, "a:0")
        let (videoSpan, soundSpan) = (shownVideo.end - shownVideo.start, shownSound.end - shownSound.start)
        #expect(
            abs(videoSpan - program) <= tolerance && abs(soundSpan - program) <= tolerance,
            "the program lasts \(program) s; the ladder's picture \(videoSpan) s, its sound \(soundSpan) s"
        )
        // The playlists say how long each rendition is shown, to a frame.
        let (videoDeclared, soundDeclared) = (try declared(output, rendition.name), try declared(output, "audio"))
        #expect(
            abs(videoDeclared - videoSpan) <= 1.0 / 30 + 0.001
                && abs(soundDeclared - soundSpan) <= 1024.0 / 48000 + 0.001,
            "EXTINFs add up to \(videoDeclared) s (picture shown \(videoSpan) s), \(soundDeclared) s (sound \(soundSpan) s)"
        )
        // A picture padded to the sound's end is a picture every frame, not one long frame.
        let frameTime = (picture.end - picture.start) / Double(max(1, picture.packets))
        #expect(
            Double(shownVideo.packets) >= (program / frameTime).rounded() - 1,
            "\(shownVideo.packets) pictures for \(program) s at \(frameTime) s each"
        )
        if program - (sound.end - origin) > 0.5 {
            let loudest = try await loudestAtEnd(sounds, seconds: min(program - (sound.end - origin), 1) - 0.1)
            #expect(loudest < -60, "the padded end of the sound peaks at \(loudest) dB")
        }
        if abs(picture.end - sound.end) > 0.5 {
            #expect(result.warnings?.contains { $0.contains("before the") } == true, "\(result.warnings ?? [])")
        }
        try await Self.decodes(output, "master.m3u8")
        if play {
            let played = try await ProcessRunner.run("scripts/browser-play.sh", [output])
            #expect(played.status == 0, "\(played.stdoutText) \(played.stderr)")
            #expect(played.stdoutText.contains(#""ended": true"#), "\(played.stdoutText)")
        }
    }

    /// Makes `variant`'s clip in `directory` and its ladder of `rungs` in `out`.
    static func ladder(
        _ variant: Variant,
        _ rungs: String,
        in directory: TemporaryDirectory
    ) async throws -> (input: String, output: String, result: LadderResult) {
        let input = try await LadderSessionTests.clip(directory, variant.file, variant.arguments)
        let output = directory.file("out")
        return (input, output, try LadderSessionTests.ladder(input, into: output, LadderOptions(ladder: rungs)))
    }

    @Test("every rendition lasts the program: the medium that ends first is padded", arguments: endings)
    func ends(_ variant: Variant) async throws {
        try await withTemporaryDirectory("ladder-ends") { directory in
            let (input, output, result) = try await Self.ladder(variant, "234p", in: directory)
            try await Self.check(result, output, input: input, play: variant.play)
        }
    }

    /// A 12 s 640x360 picture whose rate changes at `at` seconds, and 12 s of sound (or none).
    static func changing(
        _ name: String,
        from: Int,
        to: Int,
        at: Double,
        sound: Bool = true,
        play: Bool = false
    )
        -> Variant
    {
        // Every frame at 30 fps, every other one at 15.
        let keep = { (rate: Int) in rate == 30 ? "1" : "not(mod(n\\,2))" }
        let select = "select='if(lt(t\\,\(at))\\,\(keep(from))\\,\(keep(to)))'"
        return Variant(
            name: name,
            file: "vfr.mp4",
            arguments: ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=12"]
                + (sound ? ["-f", "lavfi", "-i", "sine=f=440:r=48000:d=12", "-c:a", "aac"] : [])
                + ["-vf", select, "-fps_mode", "vfr", "-c:v", "libx264", "-preset", "ultrafast"],
            play: play
        )
    }

    static let rates: [Variant] = [
        changing("30 fps, then 15 fps from 6 s (a segment boundary)", from: 30, to: 15, at: 6),
        changing("15 fps, then 30 fps from 6 s", from: 15, to: 30, at: 6),
        changing("30 fps, then 15 fps from 3.5 s (mid-segment)", from: 30, to: 15, at: 3.5, play: true),
        changing("15 fps, then 30 fps from 8.2 s (mid-segment)", from: 15, to: 30, at: 8.2),
        changing("30 fps, then 15 fps from 7 s, no sound", from: 30, to: 15, at: 7, sound: false),
    ]

    @Test("a frame rate that changes: two renditions, aligned keyframes, every picture kept", arguments: rates)
    func changingRate(_ variant: Variant) async throws {
        try await withTemporaryDirectory("ladder-vfr") { directory in
            let (input, output, result) = try await Self.ladder(variant, "234p,360p", in: directory)
            #expect(result.report.must.isEmpty, "\(result.report)")
            #expect(result.renditions.map(\.name) == ["234p", "360p"], "\(result.renditions)")
            try await LadderSessionTests.checkKeyframes(result, in: output)
            let source = try await Self.probe(input, "v:0")
            for rendition in result.renditions {
                let shown = try await Self.probe(
                    try Self.joined(output, rendition.name, segments: rendition.segments),
                    "v:0"
                )
                // Every picture of the source, and at most one more (the sound may outlast it),
                // shown as long as the playlist says, to a frame.
                #expect(
                    shown.packets >= source.packets && shown.packets <= source.packets + 1,
                    "\(rendition.name): \(shown.packets) pictures of \(source.packets)"
                )
                let declared = try Self.declared(output, rendition.name)
                #expect(
                    abs(declared - (shown.end - shown.start)) <= 1.0 / 30 + 0.001,
                    "\(rendition.name): EXTINFs add up to \(declared) s, its pictures are shown \(shown.end - shown.start) s"
                )
            }
            if result.audio != nil {
                try await Self.check(result, output, input: input, play: variant.play)
            } else {
                try await Self.decodes(output, "master.m3u8")
            }
        }
    }

    @Test(
        "a CMAF initialization segment without media (sound alone, or picture and sound) is refused as an export is",
        arguments: [["-vn"], []]
    )
    func initializationAlone(_ only: [String]) async throws {
        try await withTemporaryDirectory("ladder-init") { directory in
            // ffmpeg's hls muxer writes the initialization segment as a file of its own.
            _ = try await LadderSessionTests.clip(
                directory,
                "source.m3u8",
                [
                    "-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=2", "-f", "lavfi", "-i", "sine=d=2", "-c:v",
                    "libx264", "-c:a", "aac", "-f", "hls", "-hls_segment_type", "fmp4",
                ] + only
            )
            #expect {
                try LadderSessionTests.ladder(directory.file("init.mp4"), into: directory.file("out"))
            } throws: { error in
                (error as? MediaError)?.code == .decodeFailed && "\(error)".contains("no frame of init.mp4")
            }
        }
    }

    @Test(
        "one picture whose track claims 90,000 fps under 20 s of sound: padded at 60 pictures a second at most",
        .timeLimit(.minutes(3))
    )
    func stillPicture() async throws {
        try await withTemporaryDirectory("ladder-still") { directory in
            let variant = Variant(
                name: "still",
                file: "still.mp4",
                arguments: [
                    "-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=0.04", "-f", "lavfi", "-i", "sine=d=20",
                    "-fps_mode", "passthrough", "-r", "90000", "-c:v", "libx264", "-c:a", "aac",
                ]
            )
            let (_, output, result) = try await Self.ladder(variant, "auto", in: directory)
            #expect(result.report.must.isEmpty, "\(result.report)")
            #expect(result.warnings?.contains { $0.contains("picture ends") } == true, "\(result.warnings ?? [])")
            let rendition = try #require(result.renditions.first)
            let shown = try await Self.probe(
                try Self.joined(output, rendition.name, segments: rendition.segments),
                "v:0"
            )
            #expect(abs(shown.end - shown.start - 20) < 0.1, "shown \(shown.start)…\(shown.end) s")
            #expect(shown.packets >= 20 && shown.packets <= 20 * 60 + 2, "\(shown.packets) pictures")
        }
    }
}
