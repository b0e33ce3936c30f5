import Foundation
import MediaTestKit
import Testing

@testable import Media

@Suite("Fit inside the box (docs/spec.md §3)")
struct GeometryTests {
    struct Case: Sendable, CustomStringConvertible {
        var width: Int
        var height: Int
        var sar: (Int, Int) = (1, 1)
        var rotation = 0
        var box: (Int, Int)?
        var expected: (Int, Int)
        var description: String {
            "\(width)x\(height) sar \(sar.0):\(sar.1) rot \(rotation) in \(box.map { "\($0.0)x\($0.1)" } ?? "source") → \(expected.0)x\(expected.1)"
        }
    }

    static let cases: [Case] = [
        Case(width: 1920, height: 1080, box: (426, 240), expected: (426, 240)),
        Case(width: 1920, height: 1080, box: (854, 480), expected: (854, 480)),
        Case(width: 1920, height: 1080, box: (1280, 720), expected: (1280, 720)),
        // Portrait fits with its long side against the box's long side.
        Case(width: 1080, height: 1920, box: (1280, 720), expected: (720, 1280)),
        Case(width: 1920, height: 1080, rotation: 90, box: (1280, 720), expected: (720, 1280)),
        Case(width: 1920, height: 1080, rotation: 270, box: (426, 240), expected: (240, 426)),
        // Never upscaled.
        Case(width: 320, height: 240, box: (1280, 720), expected: (320, 240)),
        Case(width: 320, height: 240, box: nil, expected: (320, 240)),
        // Odd sizes become even, never larger than the source.
        Case(width: 321, height: 241, box: nil, expected: (320, 240)),
        Case(width: 321, height: 241, box: (426, 240), expected: (320, 240)),
        // Anamorphic: 480x360 at 4:3 pixels is shown 640x360.
        Case(width: 480, height: 360, sar: (4, 3), box: nil, expected: (640, 360)),
        Case(width: 480, height: 360, sar: (4, 3), box: (426, 240), expected: (426, 240)),
        Case(width: 720, height: 576, sar: (16, 15), box: (426, 240), expected: (320, 240)),
        // 4:3 into a 16:9 box is bound by height.
        Case(width: 640, height: 480, box: (426, 240), expected: (320, 240)),
        Case(width: 4096, height: 2160, box: (1920, 1080), expected: (1920, 1012)),
        Case(width: 2, height: 2, box: (426, 240), expected: (2, 2)),
        Case(width: 3, height: 1000, box: (426, 240), expected: (2, 426)),
    ]

    @Test(arguments: cases)
    func fitsInsideTheBox(_ test: Case) {
        let display = Fit.displaySize(width: test.width, height: test.height, sar: test.sar, rotation: test.rotation)
        let size = Fit.outputSize(display: display, box: test.box)
        #expect(size.width == test.expected.0 && size.height == test.expected.1, "\(test)")
        #expect(size.width % 2 == 0 && size.height % 2 == 0)
    }

    /// The scale expression printed by `presets` is what ffmpeg runs in the benchmark and what
    /// users copy: it must compute the same size as our code, checked by running ffmpeg itself.
    @Test(
        arguments: [
            (1920, 1080, 1, 1, 426, 240), (1080, 1920, 1, 1, 1280, 720), (321, 241, 1, 1, 426, 240),
            (480, 360, 4, 3, 426, 240), (320, 240, 1, 1, 1280, 720), (720, 576, 16, 15, 854, 480),
            (4096, 2160, 1, 1, 1920, 1080),
        ] as [(Int, Int, Int, Int, Int, Int)]
    )
    func ffmpegScaleExpressionAgrees(
        width: Int,
        height: Int,
        sarNum: Int,
        sarDen: Int,
        boxWidth: Int,
        boxHeight: Int
    ) async throws {
        let filter = Preset.scaleFilter(box: (boxWidth, boxHeight))
        try await withTemporaryDirectory("scale") { directory in
            let output = directory.file("frame.png")
            try await ProcessRunner.check(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                    "color=s=\(width)x\(height):d=0.04,setsar=\(sarNum)/\(sarDen)",
                    "-vf", filter, "-frames:v", "1", output,
                ]
            )
            let video = try #require(try await FFProbe.probe(output).video)
            let display = Fit.displaySize(width: width, height: height, sar: (sarNum, sarDen), rotation: 0)
            let ours = Fit.outputSize(display: display, box: (boxWidth, boxHeight))
            #expect(
                video.width == ours.width && video.height == ours.height,
                "ffmpeg made \(video.width ?? 0)x\(video.height ?? 0), we make \(ours)"
            )
        }
    }
}
