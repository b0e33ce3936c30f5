import Foundation
import MediaTestKit
import Testing

@testable import Media

/// The image generator against ffprobe and ffmpeg: the grey-ramp fixtures show frame n as a flat
/// grey of luma 16 + 2n, so the mean of an image (decoded by ffmpeg) names the source frame it
/// shows, and ffprobe's frame times say which frame is displayed at any time.
@Suite("Image generator", .timeLimit(.minutes(5)))
struct ImageGeneratorTests {
    static let ramps: [Fixture] = [
        .greyRamp, .greyRampTS, .greyRampVFR, .greyRampOpenGOP, .greyRampRotated, .greyRampAnamorphic,
    ]

    /// What the source says: each frame's time (seconds from the file's start) and grey level.
    struct Source {
        var times: [Double]
        var means: [Double]

        init(_ path: String) async throws {
            let start = try await FFProbe.probe(path).format.startSeconds
            times = try await FFProbe.videoFrameTimes(path).map { $0 - start }
            // Through RGB as the PNG images are (yuv → rgb24 → gray), so both round alike.
            let pixels = [UInt8](
                try await ProcessRunner.check(
                    "ffmpeg",
                    [
                        "-nostdin", "-v", "error", "-noautorotate", "-i", path, "-map", "0:v:0", "-vf",
                        "scale=iw*sar:ih,format=rgb24,format=gray", "-fps_mode", "passthrough", "-f", "rawvideo", "-",
                    ]
                ).stdout
            )
            let size = pixels.count / max(1, times.count)
            means = stride(from: 0, to: pixels.count - size + 1, by: size).map { start in
                Double(pixels[start..<start + size].reduce(0) { $0 + Int($1) }) / Double(size)
            }
        }

        /// The frame displayed at `time`: the last one starting at or before it.
        func frame(displayedAt time: Double) -> Int {
            times.lastIndex { $0 <= time + 1e-6 } ?? 0
        }

        func frame(withMean mean: Double) -> Int {
            means.indices.min { abs(means[$0] - mean) < abs(means[$1] - mean) }!
        }
    }

    /// Writes the images and returns, for each, the grey level ffmpeg decodes from it.
    static func means(of images: [GeneratedImage], in directory: TemporaryDirectory) async throws -> [Double] {
        var means: [Double] = []
        for (index, image) in images.enumerated() {
            let path = directory.file("image-\(index).png")
            try Data(try #require(image.data)).write(to: URL(fileURLWithPath: path))
            let pixels = [UInt8](
                try await ProcessRunner.check(
                    "ffmpeg",
                    ["-nostdin", "-v", "error", "-i", path, "-vf", "format=gray", "-f", "rawvideo", "-"]
                ).stdout
            )
            means.append(Double(pixels.reduce(0) { $0 + Int($1) }) / Double(max(1, pixels.count)))
        }
        return means
    }

    static func generate(
        _ path: String,
        at times: [Double],
        configure: (ImageGenerator) -> Void
    ) throws -> (images: [GeneratedImage], generator: ImageGenerator) {
        let generator = try ImageGenerator(asset: try Asset(location: path))
        generator.format = .png
        configure(generator)
        var images: [GeneratedImage] = []
        try generator.generateImages(at: times.map { Int64(($0 * 1e6).rounded()) }) { images.append($0) }
        return (images.sorted { $0.requestIndex < $1.requestIndex }, generator)
    }

    /// 20 random times (and the edges): every image is exactly the frame displayed at its time,
    /// and `actualTime` is that frame's time.
    @Test(arguments: ramps)
    func zeroToleranceGivesTheFrameDisplayedAtEachTime(fixture: Fixture) async throws {
        let path = try await Fixtures.shared.path(fixture)
        let source = try await Source(path)
        try #require(source.times.count == 100 && source.means.count == 100)
        var random = SplitMix(seed: fixture.rawValue.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) })
        let duration = source.times.last! + 0.02
        let times =
            (0..<20).map { _ in Double(random.next() % UInt64(duration * 1000)) / 1000 } + [
                0, source.times[37], source.times[37] - 0.001, source.times[99],
            ]
        let (images, _) = try Self.generate(path, at: times) { $0.requireExactFrames() }
        try #require(images.count == times.count)
        try await withTemporaryDirectory("exact") { directory in
            let means = try await Self.means(of: images, in: directory)
            for (image, mean) in zip(images, means) {
                let time = Double(image.requestedTime) / 1e6
                let expected = source.frame(displayedAt: time)
                #expect(image.result == .succeeded)
                #expect(
                    source.frame(withMean: mean) == expected,
                    "\(fixture) at \(time) s: shows frame \(source.frame(withMean: mean)), displayed is \(expected)"
                )
                let actual = Double(image.actualTime ?? -1) / 1e6
                #expect(abs(actual - source.times[expected]) < 2e-6, "\(fixture) at \(time) s: actualTime \(actual)")
            }
        }
    }

    /// With a tolerance, the image is a frame whose time is within it, and `actualTime` names it.
    @Test(arguments: [Fixture.greyRamp, .greyRampTS, .greyRampVFR])
    func toleranceBoundsTheActualTime(fixture: Fixture) async throws {
        let path = try await Fixtures.shared.path(fixture)
        let source = try await Source(path)
        let times = [0.3, 1.1, 1.9, 2.45, 2.9]  // all inside the shortest (VFR: 3 s)
        let (images, _) = try Self.generate(path, at: times) {
            $0.toleranceBefore = 150_000
            $0.toleranceAfter = 150_000
        }
        try await withTemporaryDirectory("tolerance") { directory in
            let means = try await Self.means(of: images, in: directory)
            for (image, mean) in zip(images, means) {
                let requested = Double(image.requestedTime) / 1e6
                let actual = Double(try #require(image.actualTime)) / 1e6
                let shown = source.frame(withMean: mean)
                #expect(abs(actual - source.times[shown]) < 2e-6, "\(fixture): actualTime names the frame shown")
                // The frame shown meets the window: displayed from its time to the next frame's.
                let next = shown + 1 < source.times.count ? source.times[shown + 1] : .infinity
                #expect(
                    actual <= requested + 0.15 + 1e-6 && next > requested - 0.15,
                    "\(fixture) at \(requested): frame \(shown) at \(actual) s, next at \(next) s"
                )
            }
        }
    }

    /// The default tolerance takes the keyframe a seek lands on: the last keyframe at or before
    /// the time (the ramp has one every 10 frames).
    @Test func defaultToleranceTakesTheKeyframeBefore() async throws {
        let path = try await Fixtures.shared.path(.greyRamp)
        let (images, _) = try Self.generate(path, at: [1.5, 3.1]) { _ in }
        #expect(images.map(\.actualTime) == [1_200_000, 2_800_000])
    }

    /// One forward pass: times within a keyframe interval decode forward (no seek), a time
    /// beyond the next keyframe seeks once, and unsorted requests come back for every index.
    @Test func timesAreServedInOneForwardPass() async throws {
        let path = try await Fixtures.shared.path(.greyRamp)
        let (near, nearGenerator) = try Self.generate(path, at: [0.3, 0.1, 0.2]) { $0.requireExactFrames() }
        #expect(nearGenerator.seekCount == 0)
        #expect(near.map(\.requestIndex) == [0, 1, 2])
        #expect(near.map(\.actualTime) == [280_000, 80_000, 200_000])
        let (_, farGenerator) = try Self.generate(path, at: [0.1, 3.5]) { $0.requireExactFrames() }
        #expect(farGenerator.seekCount == 1)
    }

    /// Times past the end get the last frame; `actualTime` says so.
    @Test func timesPastTheEndGetTheLastFrame() async throws {
        let path = try await Fixtures.shared.path(.greyRamp)
        let (images, _) = try Self.generate(path, at: [3.99, 10, 1e6]) { $0.requireExactFrames() }
        #expect(images.map(\.actualTime) == [3_960_000, 3_960_000, 3_960_000])
        #expect(images.allSatisfy { $0.result == .succeeded })
    }

    /// A range limits the images: times outside it are clamped into it.
    @Test func rangeClampsTimes() async throws {
        let path = try await Fixtures.shared.path(.greyRamp)
        let (images, _) = try Self.generate(path, at: [0, 1.5, 3.9]) {
            $0.requireExactFrames()
            $0.timeRange = try! TimeRange(parsing: "1s+1s")
        }
        #expect(images.map(\.actualTime) == [1_000_000, 1_480_000, 1_960_000])
    }

    /// With the default tolerance, a range still bounds the images: the keyframe before the
    /// range (at 0.8 s for a range from 1.1 s) is not taken; the frame shown at its start is.
    @Test func rangeBoundsTheDefaultTolerance() async throws {
        let path = try await Fixtures.shared.path(.greyRamp)
        let (images, _) = try Self.generate(path, at: [1.1, 1.5, 2.2]) {
            $0.timeRange = try! TimeRange(parsing: "1.1s+2s")
        }
        // 1.1 s: the frame at 1.08 s is on screen at the range's start; 1.5 s: the keyframe at
        // 1.2 s; 2.2 s: the keyframe at 2.0 s.
        #expect(images.map(\.actualTime) == [1_080_000, 1_200_000, 2_000_000])
    }

    /// Sizes: the displayed size (rotation and pixel aspect applied), fitted inside the maximum
    /// with 0 leaving an axis free, never upscaled.
    @Test func sizesApplyRotationAspectAndMaximum() async throws {
        func size(_ fixture: Fixture, _ maximum: PictureSize?) async throws -> PictureSize? {
            let path = try await Fixtures.shared.path(fixture)
            return try Self.generate(path, at: [1]) { $0.maximumSize = maximum }.images.first?.size
        }
        #expect(try await size(.greyRamp, nil) == PictureSize(width: 64, height: 48))
        #expect(try await size(.greyRampRotated, nil) == PictureSize(width: 48, height: 64))
        #expect(try await size(.greyRampAnamorphic, nil) == PictureSize(width: 128, height: 48))
        #expect(
            try await size(.greyRampAnamorphic, PictureSize(width: 64, height: 0)) == PictureSize(width: 64, height: 24)
        )
        #expect(try await size(.greyRamp, PictureSize(width: 0, height: 24)) == PictureSize(width: 32, height: 24))
        #expect(try await size(.greyRamp, PictureSize(width: 1000, height: 1000)) == PictureSize(width: 64, height: 48))
    }

    /// Each display rotation a phone writes, as (fixture, clockwise degrees). The two 180s read
    /// as −180° and +179.999° (the matrix skewed a hair either way).
    static let rotations: [(Fixture, Int)] = [
        (.rotated, 90), (.rotated180, 180), (.rotated180Other, 180), (.rotated270, 270),
    ]

    /// Rotation turns the right way for every quarter turn: the image matches ffmpeg's own
    /// autorotated frame, and not the frame left as stored or turned the other way (270° was
    /// once read as 0°: sideways thumbnails and exports from phones held the other way).
    @Test(arguments: rotations)
    func rotationMatchesFFmpeg(fixture: Fixture, degrees: Int) async throws {
        let path = try await Fixtures.shared.path(fixture)
        #expect(try Asset(location: path).primaryVideoTrack?.rotation == degrees)
        let (images, _) = try Self.generate(path, at: [1]) { $0.requireExactFrames() }
        let image = try #require(images.first?.data)
        try await withTemporaryDirectory("rotation") { directory in
            let ours = directory.file("ours.png")
            try Data(image).write(to: URL(fileURLWithPath: ours))
            let mine = try await Self.grey(["-i", ours])
            let reference = try await Self.grey(["-ss", "1", "-i", path, "-frames:v", "1"])
            // The frame as stored (180) or turned the other way (90, 270).
            let wrong = degrees == 180 ? "null" : degrees == 90 ? "transpose=2" : "transpose=1"
            let turnedWrong = try await Self.grey([
                "-noautorotate", "-ss", "1", "-i", path, "-frames:v", "1", "-vf", wrong,
            ])
            let pixels = degrees == 180 ? 320 * 240 : 240 * 320
            try #require(mine.count == pixels && reference.count == pixels && turnedWrong.count == pixels)
            #expect(Self.difference(mine, reference) < 3, "\(fixture): differs from ffmpeg's autorotated frame")
            #expect(Self.difference(mine, turnedWrong) > 20, "\(fixture): as close to the frame turned wrongly")
        }
    }

    /// A re-encoded export is upright too: its frame at 1 s matches ffmpeg's autorotated source
    /// frame at the output's size, and the output carries no rotation of its own.
    @Test(arguments: rotations)
    func rotatedExportsAreUpright(fixture: Fixture, degrees: Int) async throws {
        let path = try await Fixtures.shared.path(fixture)
        try await withTemporaryDirectory("rotated-export") { directory in
            let output = directory.file("out.mp4")
            _ = try await ExportChecks.export(path, preset: "low", range: nil, to: output)
            let stream = try #require(try await FFProbe.probe(output).video)
            let (width, height) = (try #require(stream.width), try #require(stream.height))
            #expect(stream.rotation == 0)
            #expect((width > height) == (degrees == 180), "\(fixture): \(width)x\(height)")
            let mine = try await Self.grey(["-ss", "1", "-i", output, "-frames:v", "1"])
            let reference = try await Self.grey([
                "-ss", "1", "-i", path, "-frames:v", "1", "-vf", "scale=\(width):\(height)",
            ])
            try #require(mine.count == width * height && reference.count == mine.count)
            #expect(
                Self.difference(mine, reference) < 8,
                "\(fixture): the export differs from ffmpeg's autorotated frame"
            )
        }
    }

    /// The display-matrix angle to a quarter turn, on both sides of every edge.
    @Test func displayMatrixAnglesSnapToQuarterTurns() {
        let cases: [(Double, Int)] = [
            (0, 0), (-0.4, 0), (0.4, 0), (-90, 90), (90, 270), (-89.6, 90), (89.6, 270), (180, 180), (-180, 180),
            (179.999, 180), (-179.999, 180), (-44.9, 0), (-45.1, 90), (44.9, 0), (45.1, 270), (134.9, 270),
            (135.1, 180), (-134.9, 90), (-135.1, 180), (.nan, 0), (.infinity, 0),
        ]
        for (counterClockwise, clockwise) in cases {
            #expect(
                AssetTrack.clockwiseQuarterTurn(counterClockwise: counterClockwise) == clockwise,
                "\(counterClockwise)° counter-clockwise"
            )
        }
    }

    /// One frame as grey bytes, decoded by the ffmpeg CLI.
    static func grey(_ arguments: [String]) async throws -> [UInt8] {
        [UInt8](
            try await ProcessRunner.check(
                "ffmpeg",
                ["-nostdin", "-v", "error"] + arguments + ["-f", "rawvideo", "-pix_fmt", "gray", "-"]
            ).stdout
        )
    }

    /// The mean absolute difference of two pictures' bytes.
    static func difference(_ a: [UInt8], _ b: [UInt8]) -> Double {
        Double(zip(a, b).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }) / Double(max(a.count, 1))
    }

    /// Every format decodes (ffprobe) with the right codec and size.
    @Test(arguments: ImageFormat.allCases.filter(\.isAvailable))
    func formatsDecode(format: ImageFormat) async throws {
        let path = try await Fixtures.shared.path(.basic)
        let generator = try ImageGenerator(asset: try Asset(location: path))
        generator.format = format
        generator.maximumSize = PictureSize(width: 160, height: 0)
        var data: [UInt8]?
        try generator.generateImages(at: [2_000_000]) { data = $0.data }
        try await withTemporaryDirectory("formats") { directory in
            let file = directory.file("image.\(format)")
            try Data(try #require(data)).write(to: URL(fileURLWithPath: file))
            let video = try #require(try await FFProbe.probe(file).video)
            #expect(video.codec_name == ["jpg": "mjpeg", "png": "png", "webp": "webp"][format.rawValue])
            #expect(video.width == 160 && video.height == 120)
            #expect(try await FFProbe.decodeErrors(file).isEmpty)
        }
    }

    @Test func noVideoTrackIsInputUnsupported() async throws {
        let path = try await Fixtures.shared.path(.audioOnly)
        #expect(throws: MediaError.self) { _ = try ImageGenerator(asset: try Asset(location: path)) }
        do {
            _ = try ImageGenerator(asset: try Asset(location: path))
        } catch {
            #expect(error.code == .inputUnsupported)
            #expect(error.message.contains("no video track"))
        }
    }

    /// Cancelling marks what is not done `cancelled`.
    @Test func cancellingMarksTheRestCancelled() async throws {
        let path = try await Fixtures.shared.path(.greyRamp)
        let generator = try ImageGenerator(asset: try Asset(location: path))
        generator.requireExactFrames()
        var results: [GeneratedImage.Result] = []
        try generator.generateImages(at: [0.5, 1, 1.5, 2, 2.5, 3].map { Int64($0 * 1e6) }) { image in
            results.append(image.result)
            if results.count == 2 { generator.cancelAllImageGeneration() }
        }
        #expect(results.count == 6)
        #expect(results.prefix(2).allSatisfy { $0 == .succeeded })
        #expect(results.dropFirst(2).allSatisfy { $0 == .cancelled })
    }

    /// A storyboard's sprite holds every tile, its WebVTT cues are contiguous, cover the
    /// duration and point inside the sprite, and its JSON agrees.
    @Test func storyboardGeometry() async throws {
        let path = try await Fixtures.shared.path(.long)
        try await withTemporaryDirectory("storyboard") { directory in
            var options = StoryboardOptions()
            options.tiles = 23
            options.tileSize = PictureSize(width: 100, height: 0)
            options.columns = 5
            let session = try StoryboardSession(
                asset: try Asset(location: path),
                options: options,
                timeRange: .all
            )
            let result = try session.run(directory: directory.path)
            #expect(result.files.map(\.name) == ["storyboard.jpg", "storyboard.vtt", "storyboard.json"])
            let sprite = try #require(try await FFProbe.probe(directory.file("storyboard.jpg")).video)
            let board = result.description
            #expect(board.tiles.count == 23 && result.columns == 5 && result.rows == 5)
            #expect(board.tile_width == 100 && board.tile_height == 56)
            #expect(sprite.width == 500 && sprite.height == 280)
            let vtt = try String(contentsOfFile: directory.file("storyboard.vtt"), encoding: .utf8)
            #expect(vtt.hasPrefix("WEBVTT\n"))
            let cues = StoryboardCue.parse(vtt)
            #expect(cues.count == 23)
            #expect(cues.first?.start == 0)
            #expect(abs((cues.last?.end ?? 0) - 20) < 0.001)
            for (cue, next) in zip(cues, cues.dropFirst()) { #expect(cue.end == next.start) }
            for cue in cues {
                #expect(cue.url == "storyboard.jpg")
                #expect(cue.x >= 0 && cue.y >= 0 && cue.x + cue.w <= 500 && cue.y + cue.h <= 280)
            }
            let json = try JSONDecoder().decode(
                StoryboardDescription.self,
                from: Data(contentsOf: URL(fileURLWithPath: directory.file("storyboard.json")))
            )
            #expect(json == board)
            #expect(
                zip(json.tiles, cues).allSatisfy { abs($0.start - $1.start) < 0.001 && $0.x == $1.x && $0.y == $1.y }
            )
        }
    }
}

/// One WebVTT cue of a storyboard: `HH:MM:SS.mmm --> HH:MM:SS.mmm` then `URL#xywh=x,y,w,h`.
struct StoryboardCue {
    var start: Double
    var end: Double
    var url: String
    var x: Int, y: Int, w: Int, h: Int

    static func parse(_ text: String) -> [StoryboardCue] {
        let lines = text.split(separator: "\n").map(String.init)
        func seconds(_ stamp: String) -> Double {
            let parts = stamp.split(separator: ":").compactMap { Double($0) }
            return parts.reduce(0) { $0 * 60 + $1 }
        }
        return zip(lines, lines.dropFirst()).compactMap { timing, payload in
            let ends = timing.components(separatedBy: " --> ")
            let fragment = payload.components(separatedBy: "#xywh=")
            guard ends.count == 2, fragment.count == 2 else { return nil }
            let box = fragment[1].split(separator: ",").compactMap { Int($0) }
            guard box.count == 4 else { return nil }
            return StoryboardCue(
                start: seconds(ends[0]),
                end: seconds(ends[1]),
                url: fragment[0],
                x: box[0],
                y: box[1],
                w: box[2],
                h: box[3]
            )
        }
    }
}

/// A seeded generator (the same times on every run).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
