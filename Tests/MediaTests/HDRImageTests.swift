import CFFmpeg
import Foundation
import JobctlCore
import MediaTestKit
import Testing

@testable import Media

/// Images of HDR sources (issue 44): a thumbnail or a storyboard tile is SDR, tone-mapped by
/// the same chain as exports, not the PQ or HLG signal shown as if it were BT.709 (washed out
/// and grey). The oracle is the ffmpeg CLI running the published chain on the same frame.
@Suite("HDR images", .timeLimit(.minutes(5)))
struct HDRImageTests {
    @Test(
        "a thumbnail of a PQ or HLG frame is the CLI chain's picture, not the signal re-tagged",
        arguments: [Fixture.hdr10, .hlg]
    )
    func thumbnail(_ fixture: Fixture) async throws {
        try await withTemporaryDirectory("hdr-thumbnail") { directory in
            let input = try await Fixtures.shared.path(fixture)
            let generator = try ImageGenerator(asset: try Asset(location: input))
            generator.requireExactFrames()
            generator.format = .jpeg
            var images: [GeneratedImage] = []
            try generator.generateImages(at: [1_000_000]) { images.append($0) }
            let data = try #require(images.first?.data, "\(images.first?.error.map { "\($0)" } ?? "no image")")
            let ours = directory.file("ours.jpg")
            try Data(data).write(to: URL(fileURLWithPath: ours))

            func cli(_ filter: String, _ name: String) async throws -> String {
                let path = directory.file(name)
                _ = try await ProcessRunner.check(
                    "ffmpeg",
                    [
                        "-nostdin", "-v", "error", "-y", "-ss", "1", "-i", input, "-frames:v", "1", "-vf",
                        filter + ",format=yuvj420p", "-q:v", "1", path,
                    ]
                )
                return path
            }
            let reference = try await cli(HDRExportTests.cliChain, "reference.jpg")
            let retagged = try await cli("format=yuv420p", "retagged.jpg")
            let psnr = try await FFProbe.lumaPSNR(ours, reference)
            let wrong = try await FFProbe.lumaPSNR(retagged, reference)
            #expect(psnr > 30, "\(psnr) dB against the CLI's tone-mapped frame")
            #expect(wrong < 25, "the re-tagged frame scores \(wrong) dB: the reference does not discriminate")
        }
    }

    @Test("a storyboard tile of an HDR source is tone-mapped too, and tagged BT.709")
    func storyboardTile() async throws {
        let asset = try Asset(location: try await Fixtures.shared.path(.hdr10))
        let generator = try ImageGenerator(asset: asset)
        var tiles: [Frame] = []
        try generator.generatePictures(
            at: [500_000],
            pixelFormat: AV_PIX_FMT_YUV420P,
            size: PictureSize(width: 160, height: 120)
        ) {
            _,
            _,
            picture in
            tiles.append(picture)
        } failed: { _, error in
            Issue.record("\(error)")
        }
        let tile = try #require(tiles.first)
        #expect(tile.pointer.pointee.format == AV_PIX_FMT_YUV420P.rawValue)
        #expect(tile.pointer.pointee.color_trc == AVCOL_TRC_BT709, "the tile is tagged as what it now is")
    }

    @Test("an HLS ladder of an HDR source is SDR: every rendition tone-mapped, 8-bit, tagged BT.709")
    func ladder() async throws {
        try await withTemporaryDirectory("hdr-ladder") { directory in
            let input = try await Fixtures.shared.path(.hdr10)
            let output = directory.file("ladder")
            let result = try LadderSession(asset: try Asset(location: input), options: LadderOptions()).run(
                directory: output
            )
            let names = result.renditions.map(\.name)
            try #require(!names.isEmpty, "\(result)")
            for name in names {
                // The init segment and the first media segment, end to end: a playable file.
                let joined = directory.file("\(name).mp4")
                var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(output)/\(name)-init.mp4"))
                bytes += try Data(contentsOf: URL(fileURLWithPath: "\(output)/\(name)-00001.m4s"))
                try bytes.write(to: URL(fileURLWithPath: joined))
                let video = try #require(try await FFProbe.probe(joined).video, "\(name)")
                #expect(video.pix_fmt == "yuv420p" && video.color_transfer == "bt709", "\(name)")
                #expect(video.color_primaries == "bt709" && video.color_space == "bt709", "\(name)")
            }
        }
    }

    @Test("an untagged 10-bit picture of a track decided PQ or HLG is tone-mapped, tagged BT.709")
    func untaggedPicture() throws {
        for range in [DynamicRange.pq, .hlg] {
            let picture = try Frame.video(width: 64, height: 48, format: AV_PIX_FMT_YUV420P10LE)
            for plane in 0..<3 {
                let rows = plane == 0 ? 48 : 24
                let samples = picture.linesize(plane) / 2 * rows
                let base = UnsafeMutableRawPointer(picture.plane(plane)).assumingMemoryBound(to: UInt16.self)
                for index in 0..<samples { base[index] = plane == 0 ? 600 : 512 }
            }
            #expect(picture.pointer.pointee.color_trc == AVCOL_TRC_UNSPECIFIED)
            let mapped = try ToneMapper(width: 64, height: 48, from: range).map(picture)
            #expect(mapped.pointer.pointee.format == AV_PIX_FMT_YUV420P.rawValue, "\(range)")
            #expect(mapped.pointer.pointee.color_trc == AVCOL_TRC_BT709, "\(range)")
            // A mid-grey signal comes out a visible grey, not black or white.
            let luma = mapped.plane(0)[mapped.linesize(0) * 24 + 32]
            #expect((30...220).contains(luma), "\(range): luma \(luma)")
        }
    }
}
