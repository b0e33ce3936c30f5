import Foundation
import MediaTestKit
import Testing

@testable import Media

/// Exports with the library and checks the output with ffprobe and ffmpeg (the independent
/// oracle) against what the source, the preset and the range say it must be.
enum ExportChecks {
    /// Runs an export of `input` and returns the result (or the error).
    static func export(
        _ input: String,
        preset name: String,
        range: String?,
        to output: String,
        format: ContainerFormat? = nil
    ) async throws -> ExportResult {
        let asset = try Asset(location: input)
        let preset = try PresetCatalog.builtIn.preset(named: name)
        let timeRange = try range.map { try TimeRange(parsing: $0) } ?? .all
        return try await ExportSession(
            asset: asset,
            preset: preset,
            outputPath: output,
            format: format,
            timeRange: timeRange
        ).export()
    }

    /// The frames an output must hold, from the source's own frame times: those shown in
    /// [start, end), the first being the one on screen at `start` (docs/spec.md §2).
    static func expectedFrames(sourceTimes: [Double], start: Double, end: Double) -> Int {
        let epsilon = 1e-4
        let inRange = sourceTimes.filter { $0 >= start - epsilon && $0 < end - epsilon }
        let shownAtStart =
            sourceTimes.contains { $0 < start - epsilon } && (inRange.first.map { $0 > start + epsilon } ?? true)
        return inRange.count + (shownAtStart ? 1 : 0)
    }

    /// Every check of the matrix for a re-encoding preset.
    static func checkTranscode(
        source: String,
        output: String,
        preset: Preset,
        range: TimeRange?,
        result: ExportResult
    ) async throws {
        let input = try await FFProbe.probe(source)
        let out = try await FFProbe.probe(output)
        let origin = input.format.startSeconds
        let assetDuration = try #require(input.format.durationSeconds)
        let start = Double(range?.start ?? 0) / 1e6
        // A range reaching the asset's end reads to the end of the input (durations are estimates).
        let end = range?.end.map { Double($0) / 1e6 }.flatMap { $0 < assetDuration ? $0 : nil } ?? .infinity
        let context = "\(source) → \(preset.name) \(range?.description ?? "all")"

        #expect(try await FFProbe.decodeErrors(output) == "", "\(context): the output decodes with errors")
        #expect(abs(result.actualRange.start - start) < 0.001, "\(context): actualRange.start")

        // Video: codec, pixel format, size inside the box with the source's display aspect, timing.
        if let sourceVideo = input.video, let settings = preset.video, preset.format.holdsVideo {
            let video = try #require(out.video, "\(context): no video stream")
            #expect(video.codec_name == (settings.codec == .hevc ? "hevc" : "h264"), "\(context)")
            if settings.codec == .hevc { #expect(video.codec_tag_string == "hvc1", "\(context)") }
            #expect(video.pix_fmt == "yuv420p", "\(context)")
            #expect(video.rotation == 0, "\(context): rotation is applied to the pixels")
            let width = Double(try #require(video.width))
            let height = Double(try #require(video.height))
            let aspect = try #require(sourceVideo.displayAspect)
            let display = try #require(sourceVideo.displaySize)
            #expect(Int(width) % 2 == 0 && Int(height) % 2 == 0, "\(context): odd size \(width)x\(height)")
            #expect(
                abs(width - height * aspect) <= 1 + aspect + 0.01,
                "\(context): \(width)x\(height) does not keep the aspect \(aspect)"
            )
            #expect(
                width <= display.width + 0.5 && height <= display.height + 0.5,
                "\(context): upscaled from \(display)"
            )
            if let box = settings.box {
                #expect(
                    max(width, height) <= Double(max(box.width, box.height))
                        && min(width, height) <= Double(min(box.width, box.height)),
                    "\(context): \(width)x\(height) outside \(box)"
                )
            }
            #expect(abs(video.startSeconds ?? -1) < 0.001, "\(context): video starts at \(video.startSeconds ?? -1)")

            let sourceTimes = try await FFProbe.videoFrameTimes(source).map { $0 - origin }
            let expected = expectedFrames(sourceTimes: sourceTimes, start: start, end: end)
            let frames = try await FFProbe.videoFrameTimes(output)
            #expect(frames.count == expected, "\(context): \(frames.count) frames, expected \(expected)")
            #expect(abs((frames.first ?? -1)) < 0.001, "\(context): first frame at \(frames.first ?? -1)")
            if end <= (sourceTimes.last ?? 0), let duration = video.durationSeconds, let rate = sourceVideo.frameRate {
                // "lasts DURATION within one frame period" (docs/spec.md §2).
                #expect(
                    abs(duration - (end - start)) <= 1 / rate + 0.002,
                    "\(context): video lasts \(duration), range \(end - start)"
                )
            }
            let resultTrack = result.tracks.first { $0.mediaType == .video }
            #expect(resultTrack?.frames == Int64(frames.count), "\(context): result.frames")
        } else {
            #expect(out.video == nil, "\(context): unexpected video")
        }

        // Audio: every source audio track, AAC 44.1 kHz, never upmixed, sample-accurate.
        if let settings = preset.audio {
            #expect(
                out.audio.count == input.audio.count,
                "\(context): \(out.audio.count) audio tracks of \(input.audio.count)"
            )
            for (position, (sourceAudio, audio)) in zip(input.audio, out.audio).enumerated() {
                #expect(audio.codec_name == "aac", "\(context)")
                #expect(audio.sampleRate == settings.sampleRate, "\(context)")
                #expect(
                    audio.channels == min(settings.channels ?? 2, sourceAudio.channels ?? 2),
                    "\(context): channels"
                )
                #expect(
                    abs(audio.startSeconds ?? -1) < 0.001,
                    "\(context): audio starts at \(audio.startSeconds ?? -1)"
                )
                // The source's real length, from decoding it (container durations are estimates).
                let sourceSamples = try await FFProbe.audioSampleCount(source, audioStream: position)
                let sourceEnd =
                    (sourceAudio.startSeconds ?? origin) - origin + Double(sourceSamples)
                    / Double(sourceAudio.sampleRate ?? 48000)
                let audioDuration = min(end, sourceEnd) - start
                let samples = try await FFProbe.audioSampleCount(output, audioStream: position)
                let expected = audioDuration * Double(settings.sampleRate ?? 44100)
                #expect(abs(Double(samples) - expected) <= 1024, "\(context): \(samples) samples, expected \(expected)")
            }
        } else {
            #expect(out.audio.isEmpty, "\(context)")
        }
        #expect(
            abs(result.duration - (out.format.durationSeconds ?? 0)) < 0.05,
            "\(context): result.duration \(result.duration)"
        )
    }

    /// Checks a passthrough output: the same codecs, from a keyframe at or before the start.
    static func checkPassthrough(source: String, output: String, range: TimeRange?, result: ExportResult) async throws {
        let input = try await FFProbe.probe(source)
        let out = try await FFProbe.probe(output)
        let start = Double(range?.start ?? 0) / 1e6
        let context = "\(source) → passthrough \(range?.description ?? "all")"
        #expect(try await FFProbe.decodeErrors(output) == "", "\(context): the output decodes with errors")
        if let video = input.video {
            let copied = try #require(out.video, "\(context): no video")
            #expect(
                copied.codec_name == video.codec_name && copied.width == video.width && copied.height == video.height,
                "\(context)"
            )
            #expect(copied.rotation == video.rotation, "\(context): the display matrix is kept")
            // From the keyframe at or before the start (at 0); a copy from the top keeps a late video's offset.
            let lateBy = max(0, (video.startSeconds ?? 0) - input.format.startSeconds - result.actualRange.start)
            #expect(
                abs((copied.startSeconds ?? -1) - lateBy) < 0.002,
                "\(context): video starts at \(copied.startSeconds ?? -1)"
            )
        }
        #expect(out.audio.map(\.codec_name) == input.audio.map(\.codec_name), "\(context)")
        #expect(result.actualRange.start <= start + 0.001, "\(context): starts after the range start")
        #expect(
            result.actualRange.start >= 0 && start - result.actualRange.start < 3.1,
            "\(context): keyframe too far back"
        )
        #expect(abs(result.duration - (out.format.durationSeconds ?? 0)) < 0.1, "\(context): result.duration")
    }

    /// Whether the ffmpeg CLI can stream-copy `input` into `format` (an independent opinion of
    /// what `preset_incompatible` should say).
    static func ffmpegCanCopy(
        _ input: String,
        into format: ContainerFormat,
        directory: TemporaryDirectory
    ) async throws -> Bool {
        let muxer = format == .m4a ? "ipod" : format.rawValue
        let result = try await ProcessRunner.run(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", input, "-map", "0:v:0?", "-map", "0:a?", "-c", "copy", "-t", "1", "-f",
                muxer, directory.file("ffmpeg-copy.\(format.rawValue)"),
            ]
        )
        return result.status == 0
    }
}
