import Foundation
import MediaTestKit
import Testing

@testable import Media

/// Real-world shapes a player's corpus has and jobctl once refused or misread (issue 31),
/// generated: fragmented MP4 whose headers say "indeterminate", E-AC-3, audio with a gap in
/// its timestamps, 8K, an MP3 after 100 kB of junk, still pictures. Outputs checked with
/// ffprobe and ffmpeg. (HLS and DASH: ManifestTests.)
@Suite("Real-world shapes", .timeLimit(.minutes(5)))
struct RealWorldShapesTests {
    /// ISO BMFF's "indeterminate" durations (all ones) are not 335,544 s: the file's length is
    /// unknown, what it holds is exported (with a warning), and the limits apply to what is read.
    @Test func fragmentedMP4WithIndeterminateDurationsExportsWhatItHolds() async throws {
        let path = try await Fixtures.shared.path(.fragmentedIndeterminate)
        let asset = try Asset(location: path)
        #expect(asset.duration == nil && asset.durationIsIndeterminate)
        #expect(asset.tracks.allSatisfy { $0.duration == nil })
        try await withTemporaryDirectory("fragmented") { directory in
            for range in [nil, "0s+10s", "1s+2s"] as [String?] {
                let output = directory.file("out-\(range ?? "all").mp4")
                let result = try await ExportChecks.export(path, preset: "low", range: range, to: output)
                let probe = try await FFProbe.probe(output)
                let expected = range == "1s+2s" ? 2.0 : 4.0
                #expect(
                    abs((probe.format.durationSeconds ?? 0) - expected) < 0.2,
                    "\(range ?? "all"): \(probe.format.duration ?? "?")"
                )
                #expect(try await FFProbe.decodeErrors(output) == "")
                #expect(
                    result.warnings?.first?.contains("do not say how long it is") == true,
                    "\(result.warnings ?? [])"
                )
            }
            // The limits work on what is read: the guard against a tiny file that encodes for hours.
            let limited = try Asset(location: path, limits: ResourceLimits(maxDuration: 2_000_000))
            await #expect {
                try await ExportSession(
                    asset: limited,
                    preset: try PresetCatalog.builtIn.preset(named: "low"),
                    outputPath: directory.file("limited.mp4"),
                    timeRange: .all
                ).export()
            } throws: { ($0 as? MediaError)?.code == .limitExceeded }
            #expect(!FileManager.default.fileExists(atPath: directory.file("limited.mp4")))
        }
        // The same file with its true durations reads as it always did.
        #expect(
            try Asset(location: try await Fixtures.shared.path(.fragmented)).durationSeconds.map { $0 > 3.9 } == true
        )
    }

    /// E-AC-3 (Dolby Digital Plus) is decoded to its end.
    @Test func eac3ExportsToItsEnd() async throws {
        let path = try await Fixtures.shared.path(.eac3)
        try await withTemporaryDirectory("eac3") { directory in
            let output = directory.file("out.m4a")
            _ = try await ExportChecks.export(path, preset: "m4a", range: nil, to: output)
            let probe = try await FFProbe.probe(output)
            #expect(abs((probe.format.durationSeconds ?? 0) - 3.0) < 0.1, "\(probe.format.duration ?? "?")")
            #expect(probe.audio.first?.codec_name == "aac")
        }
    }

    /// A gap in an audio track's timestamps is silence, not skipped: the output keeps the
    /// timeline (and the sync with any video). The androidx E-AC-3 sample is this shape: its
    /// frames hold 256 samples, spaced 1536 apart.
    @Test func aGapInTheAudioTimestampsIsSilence() async throws {
        let path = try await Fixtures.shared.path(.audioGap)
        try await withTemporaryDirectory("gap") { directory in
            let output = directory.file("out.m4a")
            _ = try await ExportChecks.export(path, preset: "m4a", range: nil, to: output)
            let probe = try await FFProbe.probe(output)
            #expect(abs((probe.format.durationSeconds ?? 0) - 3.0) < 0.1, "\(probe.format.duration ?? "?")")
            // Decoded by ffmpeg: loud before and after the gap, silent inside it.
            func level(_ start: Double, _ duration: Double) async throws -> Double {
                let samples = [UInt8](
                    try await ProcessRunner.check(
                        "ffmpeg",
                        [
                            "-nostdin", "-v", "error", "-ss", "\(start)", "-t", "\(duration)", "-i", output, "-f",
                            "s16le",
                            "-ac", "1", "-",
                        ]
                    ).stdout
                )
                let values = stride(from: 0, to: samples.count - 1, by: 2).map {
                    Double(Int16(bitPattern: UInt16(samples[$0]) | UInt16(samples[$0 + 1]) << 8))
                }
                return (values.map { $0 * $0 }.reduce(0, +) / Double(max(values.count, 1))).squareRoot()
            }
            #expect(try await level(0.2, 0.5) > 1000)
            #expect(try await level(1.15, 0.3) < 50, "the gap is silence")
            #expect(try await level(1.8, 0.5) > 1000)
        }
    }

    /// 8K as phones record it exports with the default limits (the hostile 8192x8192 is still
    /// refused: `LimitTests`).
    @Test func eightKExportsWithTheDefaultLimits() async throws {
        let path = try await Fixtures.shared.path(.video8K)
        #expect(ResourceLimits.default.maxPixels >= 7680 * 4320 && ResourceLimits.default.maxPixels < 8192 * 8192)
        try await withTemporaryDirectory("8k") { directory in
            let output = directory.file("out.mp4")
            _ = try await ExportChecks.export(path, preset: "low", range: nil, to: output)
            let video = try #require(try await FFProbe.probe(output).video)
            #expect(video.width == 426 && video.height == 240)
        }
    }

    /// An MP3 after 100 kB of junk: FFmpeg's probe calls it AMR-NB (a format jobctl refuses);
    /// the file's extension is tried next, and the MP3 demuxer finds the sync as a player does.
    @Test func anMP3AfterJunkIsFoundByItsSync() async throws {
        let path = try await Fixtures.shared.path(.junkPrefixedMP3)
        #expect(InputFile.probeFormatName(path) == "amrnb", "the fixture no longer reproduces the mis-probe")
        let asset = try Asset(location: path)
        #expect(asset.container == "mp3" && asset.audioTracks.first?.codec == "mp3")
        try await withTemporaryDirectory("junk") { directory in
            let output = directory.file("out.m4a")
            _ = try await ExportChecks.export(path, preset: "m4a", range: nil, to: output)
            #expect(abs((try await FFProbe.probe(output).format.durationSeconds ?? 0) - 2.0) < 0.15)
        }
    }

    /// A single still picture exports as a one-frame video, as the ffmpeg CLI makes it; one
    /// over the picture limit whose size only its decoder knows (WebP) is `limit_exceeded`.
    @Test(arguments: [Fixture.stillJPEG, .stillPNG])
    func aStillPictureExportsAsOneFrame(_ fixture: Fixture) async throws {
        let path = try await Fixtures.shared.path(fixture)
        try await withTemporaryDirectory("still") { directory in
            let output = directory.file("out.mp4")
            _ = try await ExportChecks.export(path, preset: "low", range: "0s+3s", to: output)
            let video = try #require(try await FFProbe.probe(output).video)
            #expect(video.codec_name == "h264" && video.height == 240)
            #expect(try await FFProbe.videoFrameTimes(output).count == 1)
        }
    }

    @Test func aStillPictureOverTheLimitIsLimitExceeded() async throws {
        let path = try await Fixtures.shared.path(.hugeWebP)
        #expect {
            _ = try Asset(location: path)
        } throws: {
            let error = $0 as? MediaError
            return error?.code == .limitExceeded && error?.message.contains("9000x4500") == true
        }
    }
}
