import Foundation
import JobctlCore
import MediaTestKit
import Testing

@testable import Media

/// HDR sources exported (issue 44): H.264 presets tone-map to BT.709 SDR as the published
/// ffmpeg chain does; HEVC presets keep PQ or HLG in 10 bits with HDR10's metadata, unless told
/// to tone-map. The oracles are ffprobe (tags, side data) and the ffmpeg CLI's own chain (the
/// pictures, by PSNR-Y against a lossless encode of its output).
@Suite("HDR exports", .timeLimit(.minutes(5)))
struct HDRExportTests {
    /// The chain the CLI's users run (`ToneMap.chain`, written out here on its own).
    static let cliChain =
        "zscale=transfer=linear:npl=100,format=gbrpf32le,zscale=primaries=bt709,"
        + "tonemap=tonemap=hable:desat=0,zscale=transfer=bt709:matrix=bt709:range=limited,format=yuv420p"

    static func export(
        _ fixture: Fixture,
        preset name: String,
        hdr: HDRMode? = nil,
        to path: String
    ) async throws -> ExportResult {
        var preset = try PresetCatalog.builtIn.preset(named: name)
        preset.video?.hdr = hdr
        let asset = try Asset(location: try await Fixtures.shared.path(fixture))
        return try await ExportSession(asset: asset, preset: preset, outputPath: path).export()
    }

    /// Mean PSNR-Y of `a` against `b`, by the CLI's psnr filter.
    static func psnr(_ a: String, _ b: String) async throws -> Double { try await FFProbe.lumaPSNR(a, b) }

    /// The CLI's lossless encode of `input` through `filter`: the reference picture.
    static func reference(_ input: String, filter: String, to path: String) async throws {
        _ = try await ProcessRunner.check(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-y", "-i", input, "-vf", filter, "-c:v", "libx264", "-qp", "0", "-an", path]
        )
    }

    @Test(
        "an H.264 preset tone-maps PQ and HLG to BT.709 SDR: the CLI chain's picture, not the signal re-tagged",
        arguments: [Fixture.hdr10, .hlg]
    )
    func toneMapped(_ fixture: Fixture) async throws {
        try await withTemporaryDirectory("hdr-tonemap") { directory in
            let output = directory.file("low.mp4")
            _ = try await Self.export(fixture, preset: "low", to: output)
            let video = try #require(try await FFProbe.probe(output).video)
            #expect(video.codec_name == "h264" && video.pix_fmt == "yuv420p")
            #expect(video.color_transfer == "bt709" && video.color_primaries == "bt709" && video.color_space == "bt709")

            let input = try await Fixtures.shared.path(fixture)
            let reference = directory.file("reference.mkv")
            try await Self.reference(input, filter: Self.cliChain, to: reference)
            let ours = try await Self.psnr(output, reference)
            // What a pipeline that only re-tags (the picture's PQ/HLG signal shown as BT.709)
            // would give: the test must tell the two apart.
            let retagged = directory.file("retagged.mkv")
            try await Self.reference(input, filter: "format=yuv420p", to: retagged)
            let wrong = try await Self.psnr(retagged, reference)
            #expect(ours > 32, "\(ours) dB against the CLI's tone-mapped picture")
            #expect(wrong < 25, "the re-tagged signal scores \(wrong) dB: the reference does not discriminate")
        }
    }

    @Test("an HEVC preset keeps PQ in 10 bits with the source's mastering display and light level")
    func keptPQ() async throws {
        try await withTemporaryDirectory("hdr-keep") { directory in
            let output = directory.file("hevc.mp4")
            _ = try await Self.export(.hdr10, preset: "hevc-1920x1080", to: output)
            let video = try #require(try await FFProbe.probe(output).video)
            #expect(video.codec_name == "hevc" && video.codec_tag_string == "hvc1")
            #expect(video.profile == "Main 10" && video.pix_fmt == "yuv420p10le")
            #expect(video.color_transfer == "smpte2084" && video.color_primaries == "bt2020")
            #expect(video.color_space == "bt2020nc")
            let source = try await FFProbe.firstFrameSideData(try await Fixtures.shared.path(.hdr10))
            let kept = try await FFProbe.firstFrameSideData(output)
            #expect(kept["Mastering display metadata"] == source["Mastering display metadata"], "\(kept)")
            #expect(kept["Content light level metadata"] == source["Content light level metadata"], "\(kept)")
            // Its picture is the source's (no tone-map on the way): near-lossless at this CRF.
            let reference = directory.file("reference.mkv")
            try await Self.reference(
                try await Fixtures.shared.path(.hdr10),
                filter: "format=yuv420p10le",
                to: reference
            )
            let psnr = try await Self.psnr(output, reference)
            #expect(psnr > 30, "\(psnr) dB against the source")
        }
    }

    @Test("an HEVC preset keeps HLG, rotated pictures too; --hdr tonemap makes 8-bit SDR instead")
    func keptHLGAndToneMappedHEVC() async throws {
        try await withTemporaryDirectory("hdr-hlg") { directory in
            let kept = directory.file("kept.mp4")
            let result = try await Self.export(.hlgRotated, preset: "hevc-1920x1080", to: kept)
            let video = try #require(try await FFProbe.probe(kept).video)
            #expect(video.pix_fmt == "yuv420p10le" && video.color_transfer == "arib-std-b67")
            let track = try #require(result.tracks.first { $0.mediaType == .video })
            #expect(track.width == 240 && track.height == 320, "turned upright: \(track)")
            let side = try await FFProbe.firstFrameSideData(kept)
            #expect(side["Mastering display metadata"] == nil, "HLG has no static metadata to carry")
            // The 10-bit picture turned as the CLI's autorotate turns it.
            let reference = directory.file("reference.mkv")
            try await Self.reference(
                try await Fixtures.shared.path(.hlgRotated),
                filter: "format=yuv420p10le",
                to: reference
            )
            #expect(try await Self.psnr(kept, reference) > 30)

            let mapped = directory.file("mapped.mp4")
            _ = try await Self.export(.hdr10, preset: "hevc-1920x1080", hdr: .tonemap, to: mapped)
            let sdr = try #require(try await FFProbe.probe(mapped).video)
            #expect(sdr.codec_name == "hevc" && sdr.pix_fmt == "yuv420p" && sdr.color_transfer == "bt709")
        }
    }

    @Test("--hdr keep with an H.264 preset is refused before anything is written, naming what to do")
    func keepNeedsHEVC() async throws {
        try await withTemporaryDirectory("hdr-refuse") { directory in
            let output = directory.file("low.mp4")
            do {
                _ = try await Self.export(.hdr10, preset: "low", hdr: .keep, to: output)
                Issue.record("kept HDR in an H.264 preset")
            } catch let error as MediaError {
                #expect(error.code == .presetIncompatible)
                #expect(error.message.contains("hevc-*"), "\(error.message)")
            }
            #expect(!FileManager.default.fileExists(atPath: output))
            // An SDR source has nothing to keep: the same request exports it.
            _ = try await Self.export(.basic, preset: "low", hdr: .keep, to: output)
            #expect(FileManager.default.fileExists(atPath: output))
        }
    }

    @Test("the ffmpeg command `presets` prints for an HDR source makes the picture export makes")
    func printedCommandForHDR() async throws {
        try await withTemporaryDirectory("hdr-command") { directory in
            let preset = try PresetCatalog.builtIn.preset(named: "low")
            let command = try #require(preset.ffmpegHDRCommand)
            #expect(command.contains(ToneMap.chain) && command.contains("-color_trc bt709"))
            let input = try await Fixtures.shared.path(.hdr10)
            let theirs = directory.file("cli.mp4")
            let line = command.replacingOccurrences(of: "INPUT", with: "'\(input)'")
                .replacingOccurrences(of: "OUTPUT", with: "'\(theirs)'")
            _ = try await ProcessRunner.check("/bin/sh", ["-c", "\(line) -v error -nostdin -y"])
            let ours = directory.file("ours.mp4")
            _ = try await Self.export(.hdr10, preset: "low", to: ours)
            let video = try #require(try await FFProbe.probe(theirs).video)
            #expect(video.color_transfer == "bt709" && video.pix_fmt == "yuv420p")
            let psnr = try await Self.psnr(ours, theirs)
            #expect(psnr > 30, "\(psnr) dB between export and the printed command")
            // HEVC presets keep HDR: 10 bits and x265's HDR10 parameters.
            let hevc = try #require(try PresetCatalog.builtIn.preset(named: "hevc-1920x1080").ffmpegHDRCommand)
            #expect(hevc.contains("-pix_fmt yuv420p10le") && hevc.contains("hdr10=1") && !hevc.contains("tonemap"))
            #expect(try PresetCatalog.builtIn.preset(named: "passthrough").ffmpegHDRCommand == nil)
        }
    }
}
