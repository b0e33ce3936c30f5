import Foundation
import MediaTestKit
import Testing

@testable import Media

/// What an asset says of its pictures' colour (issue 44): the range, the bit depth, HDR10's
/// static metadata from the bitstream's SEI, checked against ffprobe's reading of the same file.
@Suite("HDR, as probed")
struct HDRProbeTests {
    @Test("a PQ stream: its range, tags and depth, and the mastering display and light level of its SEI")
    func hdr10() async throws {
        let path = try await Fixtures.shared.path(.hdr10)
        let asset = try Asset(location: path)
        let track = try #require(asset.tracksWithPictureMetadata().first { $0.mediaType == .video })
        #expect(track.dynamicRange == .pq)
        #expect(track.bitDepth == 10)
        #expect(track.colorRange == "tv")
        #expect(track.color.primaries == "bt2020" && track.color.matrix == "bt2020nc")
        let oracle = try await FFProbe.firstFrameSideData(path)
        let mastering = try #require(oracle["Mastering display metadata"], "ffprobe: \(oracle)")
        let display = try #require(track.masteringDisplay, "no mastering display read")
        let ours: [String: Double] = [
            "red_x": display.red.x, "red_y": display.red.y, "green_x": display.green.x, "green_y": display.green.y,
            "blue_x": display.blue.x, "blue_y": display.blue.y, "white_point_x": display.whitePoint.x,
            "white_point_y": display.whitePoint.y, "min_luminance": display.minLuminance,
            "max_luminance": display.maxLuminance,
        ]
        for (key, value) in ours {
            let expected = try #require(mastering[key], "ffprobe has no \(key)")
            #expect(abs(value - expected) < 1e-5, "\(key): \(value), ffprobe \(expected)")
        }
        let light = try #require(oracle["Content light level metadata"])
        #expect(track.contentLightLevel == ContentLightLevel(maxContent: 1000, maxAverage: 400))
        #expect(Double(track.contentLightLevel?.maxContent ?? 0) == light["max_content"])
        #expect(Double(track.contentLightLevel?.maxAverage ?? 0) == light["max_average"])
        // Written back for x265, it is the parameter the fixture was made with.
        #expect(Fixture.hdr10Metadata.hasPrefix("master-display=" + display.x265Parameter))
    }

    @Test("an HLG stream is HLG, without static metadata; an SDR one is SDR at 8 bits")
    func hlgAndSDR() async throws {
        let hlg = try Asset(location: try await Fixtures.shared.path(.hlg))
        let video = try #require(hlg.tracksWithPictureMetadata().first { $0.mediaType == .video })
        #expect(video.dynamicRange == .hlg && video.bitDepth == 10)
        #expect(video.masteringDisplay == nil && video.contentLightLevel == nil)
        let oracle = try await FFProbe.probe(try await Fixtures.shared.path(.hlg))
        #expect(oracle.video?.color_transfer == video.colorTransfer)

        let sdr = try Asset(location: try await Fixtures.shared.path(.basic))
        let picture = try #require(sdr.primaryVideoTrack)
        #expect(picture.dynamicRange == .sdr && picture.bitDepth == 8)
        #expect(sdr.tracksWithPictureMetadata() == sdr.tracks, "an SDR input is not read again")
        #expect(sdr.tracks.first { $0.mediaType == .audio }?.dynamicRange == nil)
    }

    @Test("an interlaced stream says so, with ffprobe's field order; a progressive one does not")
    func interlaced() async throws {
        try await withTemporaryDirectory("interlaced") { directory in
            let path = directory.file("interlaced.mp4")
            _ = try await ProcessRunner.check(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "1",
                    "-c:v", "libx264", "-flags", "+ildct+ilme", "-x264-params", "tff=1", "-pix_fmt", "yuv420p", path,
                ]
            )
            let track = try #require(try Asset(location: path).primaryVideoTrack)
            let oracle = try await ProcessRunner.check(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=field_order", "-of", "csv=p=0",
                    path,
                ]
            )
            #expect(track.fieldOrder == oracle.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(track.fieldOrder == "tt" && track.isInterlaced)
            let progressive = try #require(
                try Asset(location: try await Fixtures.shared.path(.basic)).primaryVideoTrack
            )
            #expect(!progressive.isInterlaced)
        }
    }
}
