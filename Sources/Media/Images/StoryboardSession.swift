import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

/// What a storyboard looks like: the options of `jobctl storyboard` and of a `storyboard` job.
public struct StoryboardOptions: Sendable, Hashable, Codable {
    /// How many tiles; `nil`: 50 under 15 minutes, 100 from 15 minutes on.
    public var tiles: Int?
    /// The largest tile (0 on an axis: free); default 256 pixels wide.
    public var tileSize = PictureSize(width: 256, height: 0)
    /// Tiles per row; `nil`: 10 (fewer if there are fewer tiles).
    public var columns: Int?
    public var format: ImageFormat = .jpeg

    public static let maximumTiles = 1000

    public init() {}

    public func tileCount(duration: Int64) -> Int {
        tiles ?? (duration < 15 * 60 * 1_000_000 ? 50 : 100)
    }

    /// The checks of the command line's, again for options that came another way (a job row).
    public func check() throws(MediaError) {
        if let tiles, !(1...Self.maximumTiles).contains(tiles) {
            throw .invalidOption("tiles", "is between 1 and \(Self.maximumTiles)")
        }
        if let columns, !(1...100).contains(columns) { throw .invalidOption("columns", "is between 1 and 100") }
        guard (0...16384).contains(tileSize.width), (0...16384).contains(tileSize.height) else {
            throw .invalidOption("tileSize", "has sides of at most 16384")
        }
    }
}

/// The JSON description of a storyboard, in the shape hosted video services return.
public struct StoryboardDescription: Sendable, Hashable, Codable {
    public struct Tile: Sendable, Hashable, Codable {
        /// Seconds from the range's start.
        public var start: Double
        public var x: Int
        public var y: Int
    }

    /// The sprite sheet's name (relative to the description).
    public var url: String
    public var tile_width: Int
    public var tile_height: Int
    /// Seconds.
    public var duration: Double
    public var tiles: [Tile]
}

/// What a storyboard run wrote.
public struct StoryboardResult: Sendable, Hashable, Codable {
    public var files: [WrittenFile]
    public var description: StoryboardDescription
    public var columns: Int
    public var rows: Int
}

/// A hover-preview storyboard: one sprite sheet of evenly spaced tiles, a WebVTT file whose cue
/// for each span points into the sprite (`storyboard.jpg#xywh=x,y,w,h`), and the JSON
/// description. Cue times are relative to the range's start; the cues are contiguous and cover
/// the range. Each tile is the last keyframe at or before the middle of its span (fast: one
/// keyframe decoded per tile), so a long keyframe interval can repeat a tile.
public final class StoryboardSession: @unchecked Sendable {
    public let generator: ImageGenerator
    public let options: StoryboardOptions
    private let steps = StepProgress()

    /// The storyboard's shape, decided (and its size checked) before any decoding.
    private struct Layout {
        var start: Int64
        var duration: Int64
        var count: Int
        var columns: Int
        var rows: Int
        var tile: PictureSize
    }

    private let layout: Layout

    /// `input_unsupported` without a video track or a known duration, `limit_exceeded` for a
    /// sprite over the limits, `encode_failed` without the format's encoder.
    public init(asset: Asset, options: StoryboardOptions, timeRange: TimeRange) throws(MediaError) {
        try options.check()
        try asset.limits.checkDuration(of: asset, timeRange, what: "the storyboard's range of")
        try options.format.requireEncoder()
        generator = try ImageGenerator(asset: asset)
        generator.timeRange = timeRange
        generator.maximumSize = options.tileSize
        try generator.checkImageSize()
        self.options = options
        let range = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        guard let duration = range.expectedDuration, duration > 0 else {
            throw MediaError(
                .inputUnsupported,
                "\(asset.displayName) does not say how long it is: a storyboard needs a duration"
            )
        }
        let count = min(Self.clampedTiles(options.tileCount(duration: duration)), max(1, Int(duration / 1000)))
        let columns = min(count, max(1, options.columns ?? 10))
        let rows = (count + columns - 1) / columns
        // Tiles have even sides: they are placed on a 4:2:0 sheet.
        let image = generator.imageSize
        let tile = PictureSize(width: max(2, image.width & ~1), height: max(2, image.height & ~1))
        let (sheetWidth, sheetHeight) = (tile.width * columns, tile.height * rows)
        guard sheetWidth <= Self.maximumSide, sheetHeight <= Self.maximumSide,
            sheetWidth * sheetHeight <= Self.maximumPixels
        else {
            throw MediaError(
                .limitExceeded,
                "a \(sheetWidth)x\(sheetHeight) sprite is too large (at most \(Self.maximumSide) pixels a side and \(Self.maximumPixels / 1_000_000) megapixels): use fewer --tiles or --columns, or a smaller --tile-size"
            )
        }
        layout = Layout(start: range.start, duration: duration, count: count, columns: columns, rows: rows, tile: tile)
    }

    public var progress: Double { steps.fraction }

    public func cancel() { generator.cancelAllImageGeneration() }

    /// Writes the storyboard's files into `directory`, all or none.
    /// Whether `name` is one of a storyboard's files (`storyboard.jpg|png|webp|vtt|json`).
    @Sendable public static func isSetFile(_ name: String) -> Bool {
        ["vtt", "json"].map { "storyboard.\($0)" }.contains(name)
            || ImageFormat.allCases.contains { "storyboard.\($0.rawValue)" == name }
    }

    public func run(directory: String) throws(MediaError) -> StoryboardResult {
        let files = try StagedFiles(directory: directory)
        files.replacesSet = Self.isSetFile
        var result = try run(into: files)
        result.files = try files.commit()
        return result
    }

    /// Writes the storyboard's files into `files` (staged: the caller commits or discards
    /// them); the result's `files` is empty until then.
    public func run(into files: StagedFiles) throws(MediaError) -> StoryboardResult {
        if files.budget == nil { files.budget = OutputBudget(limit: generator.asset.limits.maxOutputBytes) }
        let (count, columns, rows, tile, duration) = (
            layout.count, layout.columns, layout.rows, layout.tile, layout.duration
        )
        let (sheetWidth, sheetHeight) = (tile.width * columns, tile.height * rows)
        let starts = (0..<count).map { layout.start + duration * Int64($0) / Int64(count) }
        let span = duration / Int64(count)
        generator.toleranceBefore = .max
        generator.toleranceAfter = span / 2
        steps.start(total: count)

        let sheet = try Self.blankSheet(width: sheetWidth, height: sheetHeight)
        var failure: MediaError?
        try generator.generatePictures(at: starts, pixelFormat: AV_PIX_FMT_YUV420P, size: tile) { request, _, picture in
            Self.place(
                picture,
                on: sheet,
                x: (request.index % columns) * tile.width,
                y: (request.index / columns) * tile.height
            )
            steps.step()
        } failed: { _, error in
            failure = failure ?? error
        }
        if let failure { throw failure }

        let spriteName = "storyboard.\(options.format)"
        let sprite = try ImageEncoder.encode(try Self.converted(sheet, to: options.format), as: options.format)
        let tiles = starts.enumerated().map { index, start in
            StoryboardDescription.Tile(
                start: Double(start - layout.start) / 1e6,
                x: (index % columns) * tile.width,
                y: (index / columns) * tile.height
            )
        }
        let description = StoryboardDescription(
            url: spriteName,
            tile_width: tile.width,
            tile_height: tile.height,
            duration: Double(duration) / 1e6,
            tiles: tiles
        )
        try files.write(spriteName, sprite)
        try files.write("storyboard.vtt", Array(Self.webVTT(description, ends: duration).utf8), rank: .index)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let json = try? encoder.encode(description) else { fatalError("a storyboard description always encodes") }
        // The description is what a reader starts from: shown last (`PublishRank`).
        try files.write("storyboard.json", Array(json) + [0x0A], rank: .entryPoint)
        return StoryboardResult(files: [], description: description, columns: columns, rows: rows)
    }

    /// The largest sprite: WebP's limit a side, and 64 megapixels (96 MB while it is drawn).
    static let maximumSide = 16383
    static let maximumPixels = 64_000_000

    static func clampedTiles(_ count: Int) -> Int { min(max(1, count), StoryboardOptions.maximumTiles) }

    /// One cue per tile: from its start to the next tile's (the last to `ends` µs), pointing at
    /// its rectangle of the sprite.
    static func webVTT(_ description: StoryboardDescription, ends: Int64) -> String {
        var text = "WEBVTT\n"
        for (index, tile) in description.tiles.enumerated() {
            let start = Int64((tile.start * 1e6).rounded())
            let end =
                index + 1 < description.tiles.count
                ? Int64((description.tiles[index + 1].start * 1e6).rounded()) : ends
            text += "\n\(timestamp(start)) --> \(timestamp(end))\n"
            text += "\(description.url)#xywh=\(tile.x),\(tile.y),\(description.tile_width),\(description.tile_height)\n"
        }
        return text
    }

    /// `HH:MM:SS.mmm`, rounded down to the millisecond (cues stay contiguous: each ends where
    /// the next begins, written the same way).
    static func timestamp(_ microseconds: Int64) -> String {
        let milliseconds = microseconds / 1000
        let hours = milliseconds / 3_600_000
        let minutes = milliseconds / 60_000 % 60
        let seconds = milliseconds / 1000 % 60
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = String(milliseconds % 1000)
        return
            "\(two(hours)):\(two(minutes)):\(two(seconds)).\(String(repeating: "0", count: 3 - millis.count))\(millis)"
    }

    private static func blankSheet(width: Int, height: Int) throws(MediaError) -> Frame {
        do {
            let sheet = try Frame.video(width: Int32(width), height: Int32(height), format: AV_PIX_FMT_YUV420P)
            for plane in 0..<3 {
                let rows = plane == 0 ? height : height / 2
                memset(sheet.plane(plane), plane == 0 ? 16 : 128, sheet.linesize(plane) * rows)
            }
            return sheet
        } catch {
            throw MediaError(.encodeFailed, "allocating a \(width)x\(height) storyboard failed", detail: "\(error)")
        }
    }

    /// Copies a 4:2:0 tile (even sides) onto the sheet at (x, y) (even).
    private static func place(_ tile: Frame, on sheet: Frame, x: Int, y: Int) {
        for plane in 0..<3 {
            let shift = plane == 0 ? 0 : 1
            let width = Int(tile.width) >> shift
            let height = Int(tile.height) >> shift
            let target = sheet.plane(plane) + (y >> shift) * sheet.linesize(plane) + (x >> shift)
            let source = tile.plane(plane)
            for row in 0..<height {
                memcpy(target + row * sheet.linesize(plane), source + row * tile.linesize(plane), width)
            }
        }
    }

    private static func converted(_ sheet: Frame, to format: ImageFormat) throws(MediaError) -> Frame {
        guard format.pixelFormat != AV_PIX_FMT_YUV420P else { return sheet }
        do {
            return try Scaler(width: sheet.width, height: sheet.height, format: format.pixelFormat).scale(sheet.pointer)
        } catch {
            throw MediaError(.encodeFailed, "converting the storyboard for \(format) failed", detail: "\(error)")
        }
    }
}
