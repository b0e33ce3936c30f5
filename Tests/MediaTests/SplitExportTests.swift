import Foundation
import Media
import MediaTestKit
import Testing

/// Split-and-stitch in one process (issue 27, `SplitExportSession`), against the one-process
/// export of the same preset and range, with ffprobe and ffmpeg as the oracles: the same
/// frames at the same times, the same audio, a clean stream, and seams a viewer cannot find.
@Suite("Split exports", .serialized, .timeLimit(.minutes(6)))
struct SplitExportTests {
    struct Case: Sendable, CustomStringConvertible {
        var fixture: Fixture
        var range: String
        var segment: String
        /// The range starts on a source frame (the PSNR reference can then be cut by ffmpeg).
        var aligned: Bool
        var preset = "low"
        var description: String { "\(fixture) \(range) in \(segment) segments, \(preset)" }
    }

    static let cases = [
        Case(fixture: .splitCFR, range: "0.52s+22s", segment: "6s", aligned: true),
        Case(fixture: .splitVFR, range: "1s+21s", segment: "4s", aligned: true),
        // A constant-quality preset (CRF: no pre-roll).
        Case(fixture: .splitCFR, range: "0.52s+22s", segment: "6s", aligned: true, preset: "640x480"),
        // Between two frames: the frame on screen at the start comes first, in both.
        Case(fixture: .splitCFR, range: "0.51s+19.5s", segment: "4s", aligned: false),
    ]

    /// The one-process export and the split one of `test`, in `directory`.
    static func exports(
        _ test: Case,
        in directory: TemporaryDirectory
    ) async throws -> (
        whole: String, split: String, result: ExportResult
    ) {
        let source = try await Fixtures.shared.path(test.fixture)
        let whole = directory.file("whole.mp4")
        let split = directory.file("split.mp4")
        _ = try await ExportChecks.export(source, preset: test.preset, range: test.range, to: whole)
        guard case .segments(let length) = try SplitRequest(parsing: test.segment) else {
            throw MediaError(.invalidRequest, "not a segment length")
        }
        let session = SplitExportSession(
            asset: try Asset(location: source),
            preset: try PresetCatalog.builtIn.preset(named: test.preset),
            outputPath: split,
            timeRange: try TimeRange(parsing: test.range),
            segmentLength: length,
            parallel: 2,
            scratch: directory.file("scratch")
        )
        let result = try await session.export()
        #expect(!FileManager.default.fileExists(atPath: directory.file("scratch")), "the scratch is removed")
        return (whole, split, result)
    }

    @Test(arguments: cases)
    func theSameFramesAndSoundAsOneProcess(test: Case) async throws {
        try await withTemporaryDirectory("split") { directory in
            let (whole, split, result) = try await Self.exports(test, in: directory)
            let segments = try #require(result.segments)
            #expect(segments.count >= 3, "\(segments.count) segments")
            // Contiguous: each segment starts where the one before it ended, frame after frame.
            for (before, after) in zip(segments, segments.dropFirst()) {
                #expect(after.firstFrame == before.lastFrame + 1)
                #expect(abs(after.start - (before.start + before.duration)) < 1e-6)
            }

            // Every frame at the same time as in the one-process export (variable frame rate
            // included), so the same count and the same video duration.
            let wholeTimes = try await FFProbe.videoFrameTimes(whole)
            let splitTimes = try await FFProbe.videoFrameTimes(split)
            #expect(splitTimes.count == wholeTimes.count, "\(splitTimes.count) frames, one process \(wholeTimes.count)")
            #expect(zip(splitTimes, wholeTimes).allSatisfy { abs($0 - $1) < 1e-4 }, "frame times differ")
            #expect(result.tracks.first { $0.mediaType == .video }?.frames == Int64(wholeTimes.count))
            let frame = zip(wholeTimes, wholeTimes.dropFirst()).map { $1 - $0 }.max() ?? 0.04
            let (wholeProbe, splitProbe) = (try await FFProbe.probe(whole), try await FFProbe.probe(split))
            let videoDurations = [wholeProbe, splitProbe].compactMap { $0.video?.duration.flatMap(Double.init) }
            #expect(videoDurations.count == 2 && abs(videoDurations[0] - videoDurations[1]) <= frame + 1e-6)

            // The audio: encoded once for the whole range, so the same samples at the same start.
            let wholeSamples = try await FFProbe.audioSampleCount(whole)
            #expect(try await FFProbe.audioSampleCount(split) == wholeSamples && wholeSamples > 0)
            let starts = [splitProbe.video?.start_time, splitProbe.audio.first?.start_time].compactMap {
                $0.flatMap(Double.init)
            }
            #expect(starts.count == 2 && abs(starts[0] - starts[1]) <= frame, "audio/video start: \(starts)")

            // A clean stream: decodes without an error, remuxes without a timestamp warning.
            #expect(try await FFProbe.decodeErrors(split) == "")
            let remux = try await ProcessRunner.run(
                "ffmpeg",
                [
                    "-nostdin", "-v", "warning", "-i", split, "-c", "copy", "-f", "mp4", "-y",
                    directory.file("remux.mp4"),
                ]
            )
            #expect(remux.status == 0 && !remux.stderr.contains("Non-monotonic DTS"), "\(remux.stderr)")
            #expect(!remux.stderr.contains("non monotonically"), "\(remux.stderr)")
        }
    }

    @Test(arguments: cases.filter(\.aligned))
    func theSeamsCannotBeSeen(test: Case) async throws {
        try await withTemporaryDirectory("split-seams") { directory in
            let (whole, split, result) = try await Self.exports(test, in: directory)
            let source = try await Fixtures.shared.path(test.fixture)
            let range = try TimeRange(parsing: test.range)
            let splitPSNR = try await Self.psnr(split, source: source, range: range, stats: directory.file("split.log"))
            let wholePSNR = try await Self.psnr(whole, source: source, range: range, stats: directory.file("whole.log"))
            let mean = splitPSNR.reduce(0, +) / Double(splitPSNR.count)
            let wholeMean = wholePSNR.reduce(0, +) / Double(wholePSNR.count)
            #expect(abs(mean - wholeMean) <= 0.5, "split \(mean) dB, one process \(wholeMean) dB")
            // The two frames either side of every cut look like the rest of the file.
            let segments = try #require(result.segments)
            for segment in segments.dropFirst() {
                for index in [segment.firstFrame - 1, segment.firstFrame] {
                    // At least the file's mean less 1 dB — or, where the picture is harder than
                    // the file's average (the 15 fps part of the VFR clip, whose frames score
                    // under the mean in the one-process export too), that export's own frame
                    // less 1 dB: the seam, not the content, is what is measured.
                    let floor = min(mean, wholePSNR[index]) - 1
                    #expect(
                        splitPSNR[index] >= floor,
                        "frame \(index) at a seam: \(splitPSNR[index]) dB, mean \(mean); around it \(splitPSNR[max(0, index - 5)...min(splitPSNR.count - 1, index + 5)]), one process \(wholePSNR[max(0, index - 5)...min(wholePSNR.count - 1, index + 5)])"
                    )
                }
                // The result's own seam scores are ffmpeg's.
                let measured = try #require(segment.seamPSNR, "segment \(segment.index) has no seam score")
                let oracle = [splitPSNR[segment.firstFrame - 1], splitPSNR[segment.firstFrame]]
                #expect(zip(measured, oracle).allSatisfy { abs($0 - $1) < 0.05 }, "\(measured) vs ffmpeg's \(oracle)")
            }

            // No digital silence at a seam: the tone runs through every cut.
            let silence = try await ProcessRunner.run(
                "ffmpeg",
                ["-nostdin", "-i", split, "-map", "0:a", "-af", "silencedetect=n=-80dB:d=0.005", "-f", "null", "-"]
            )
            let silentAt = silence.stderr.split(separator: "\n").filter { $0.contains("silence_start") }.compactMap {
                Double($0.split(separator: " ").last ?? "")
            }
            #expect(segments.first?.seamPSNR == nil, "no cut before the first segment")
            for segment in segments.dropFirst() {
                #expect(!silentAt.contains { abs($0 - segment.start) < 0.05 }, "silence at the seam \(segment.start)")
            }
        }
    }

    /// Each frame's PSNR against the source's frame at the same time (cut and scaled by ffmpeg).
    static func psnr(_ output: String, source: String, range: TimeRange, stats: String) async throws -> [Double] {
        let probe = try await FFProbe.probe(output)
        let (width, height) = (probe.video?.width ?? 0, probe.video?.height ?? 0)
        let start = Double(range.start) / 1e6
        let duration = Double(range.duration ?? 0) / 1e6
        try await ProcessRunner.check(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", output, "-i", source, "-lavfi",
                "[1:v]trim=start=\(start):duration=\(duration),setpts=PTS-STARTPTS,scale=\(width):\(height)[ref];[0:v][ref]psnr=stats_file=\(stats)",
                "-f", "null", "-",
            ]
        )
        return try String(contentsOfFile: stats, encoding: .utf8).split(separator: "\n").compactMap { line in
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("psnr_y:") }) else { return nil }
            let value = field.dropFirst("psnr_y:".count)
            return value == "inf" ? 100 : Double(value)
        }
    }

    @Test("the join refuses a segment that is not what its plan says, naming it")
    func theProofNamesTheSegment() async throws {
        try await withTemporaryDirectory("split-proof") { directory in
            let source = try await Fixtures.shared.path(.splitCFR)
            let asset = try Asset(location: source)
            let range = try TimeRange(parsing: "0s+12s")
            let preset = try PresetCatalog.builtIn.preset(named: "low")
            let (plan, ranges) = try #require(try SplitExport.plan(asset, range: range, segmentLength: 4_000_000))
            var parts: [SegmentJoin.Segment] = []
            for (segment, range) in zip(plan.segments, ranges) {
                let path = directory.file("segment-\(segment.index).mp4")
                let (encoded, cut) = SplitExport.encode(
                    range,
                    first: segment.index == 0,
                    preset: preset,
                    postRoll: SplitExport.postRoll
                )
                _ = try await ExportSession(
                    asset: try Asset(location: source),
                    preset: try PresetCatalog.builtIn.preset(named: "low"),
                    outputPath: path,
                    timeRange: encoded,
                    part: .video,
                    cut: cut
                ).export()
                parts.append(
                    SegmentJoin.Segment(
                        path: path,
                        frames: segment.frameCount,
                        start: range.start,
                        end: range.start + (range.duration ?? 0),
                        from: cut.start
                    )
                )
            }
            func join(_ parts: [SegmentJoin.Segment]) -> SegmentJoin.Mismatch? {
                do {
                    _ = try SegmentJoin.join(
                        parts,
                        audio: nil,
                        destination: directory.file("joined.mp4"),
                        format: .mp4,
                        temporaryTag: nil,
                        limits: .default
                    )
                    return nil
                } catch let mismatch as SegmentJoin.Mismatch {
                    return mismatch
                } catch {
                    Issue.record("\(error)")
                    return nil
                }
            }
            #expect(join(parts) == nil, "the true segments join")
            // A frame too many in the plan: its segment is named.
            var counted = parts
            counted[1].frames += 1
            #expect(join(counted)?.segment == 1)
            // Another preset's segment: other stream headers.
            let other = directory.file("other.mp4")
            let medium = try PresetCatalog.builtIn.preset(named: "medium")
            let (encoded, cut) = SplitExport.encode(
                ranges[2],
                first: false,
                preset: medium,
                postRoll: SplitExport.postRoll
            )
            _ = try await ExportSession(
                asset: try Asset(location: source),
                preset: try PresetCatalog.builtIn.preset(named: "medium"),
                outputPath: other,
                timeRange: encoded,
                part: .video,
                cut: cut
            ).export()
            var foreign = parts
            foreign[2].path = other
            let mismatch = join(foreign)
            #expect(
                mismatch?.segment == 2 && mismatch?.reason.contains("differ from segment 0") == true,
                "\(String(describing: mismatch))"
            )
            // A missing file.
            var missing = parts
            missing[0].path = directory.file("gone.mp4")
            #expect(join(missing)?.segment == 0)
            #expect(!FileManager.default.fileExists(atPath: directory.file("joined.mp4")), "nothing at the output")
        }
    }

    @Test("every audio track of the source is kept, as the one-process export keeps them")
    func severalAudioTracks() async throws {
        try await withTemporaryDirectory("split-audio") { directory in
            let source = try await Fixtures.shared.path(.multiAudio)
            let whole = directory.file("whole.mp4")
            let split = directory.file("split.mp4")
            _ = try await ExportChecks.export(source, preset: "medium", range: nil, to: whole)
            let result = try await SplitExportSession(
                asset: try Asset(location: source),
                preset: try PresetCatalog.builtIn.preset(named: "medium"),
                outputPath: split,
                segmentLength: 1_000_000,
                parallel: 2,
                scratch: directory.file("scratch")
            ).export()
            #expect((result.segments?.count ?? 0) >= 2)
            let (wholeProbe, splitProbe) = (try await FFProbe.probe(whole), try await FFProbe.probe(split))
            #expect(splitProbe.audio.count == 2 && splitProbe.audio.count == wholeProbe.audio.count)
            for index in 0..<2 {
                #expect(
                    try await FFProbe.audioSampleCount(split, audioStream: index)
                        == (try await FFProbe.audioSampleCount(whole, audioStream: index))
                )
            }
            #expect(try await FFProbe.videoFrameTimes(split) == (try await FFProbe.videoFrameTimes(whole)))
        }
    }

    @Test("a boundary moves to a scene cut within a second of it; the output is still the one-process export's")
    func boundariesSnapToSceneCuts() async throws {
        try await withTemporaryDirectory("split-scenes") { directory in
            let source = try await Fixtures.shared.path(.splitScenes)
            let asset = try Asset(location: source)
            let (plan, _) = try #require(try SplitExport.plan(asset, range: .all, segmentLength: 4_000_000))
            // Grid boundaries at 4 s and 8 s; the cut at 4.6 s is within a second of the first.
            #expect(plan.segments.map(\.start) == [0, 4_600_000, 8_000_000], "\(plan.segments.map(\.start))")
            let whole = directory.file("whole.mp4")
            let split = directory.file("split.mp4")
            _ = try await ExportChecks.export(source, preset: "low", range: nil, to: whole)
            let result = try await SplitExportSession(
                asset: asset,
                preset: try PresetCatalog.builtIn.preset(named: "low"),
                outputPath: split,
                segmentLength: 4_000_000,
                parallel: 2,
                scratch: directory.file("scratch")
            ).export()
            #expect(result.segments?.map(\.firstFrame) == [0, 115, 200])
            #expect(try await FFProbe.videoFrameTimes(split) == (try await FFProbe.videoFrameTimes(whole)))
        }
    }

    @Test(
        "a segment's post-roll feeds the encoder's lookahead but is never encoded: its file holds its own frames",
        arguments: ["640x480", "low"]
    )
    func postRollIsNotEncoded(preset name: String) async throws {
        try await withTemporaryDirectory("split-post-roll") { directory in
            let source = try await Fixtures.shared.path(.splitCFR)  // 25 fps, B-frames
            let preset = try PresetCatalog.builtIn.preset(named: name)
            let segment = TimeRange(start: 6_000_000, duration: 4_000_000)  // frames 150..<250
            let (encoded, cut) = SplitExport.encode(
                segment,
                first: false,
                preset: preset,
                postRoll: SplitExport.postRoll
            )
            #expect(encoded.start + (encoded.duration ?? 0) == 12_500_000, "2.5 s of post-roll")
            let path = directory.file("segment.mp4")
            _ = try await ExportSession(
                asset: try Asset(location: source),
                preset: preset,
                outputPath: path,
                timeRange: encoded,
                part: .video,
                cut: cut
            ).export()
            // The pre-roll (a bitrate preset's 2 s: 50 frames) is encoded; the post-roll's 62 are
            // not, and nothing of the segment is missing.
            let preRoll = Int((segment.start - encoded.start) / 40_000)
            let times = try await FFProbe.videoFrameTimes(path)
            #expect(times.count == preRoll + 100, "\(times.count) frames")
            #expect(times.allSatisfy { $0 < Double(cut.end + 5) / 1e6 })
        }
    }
}
