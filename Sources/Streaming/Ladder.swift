import Foundation

/// The renditions of an adaptive-bitrate ladder (issue 29), after the video tables of Apple's
/// HLS authoring specification: which rungs a source gets, at what size and bit rate. Pure.
///
/// A rung is named by its short side (`720p`) and sized to the source's display aspect ratio,
/// its long side rounded to an even number: a 4:3 source's `720p` is 960×720, a phone's
/// portrait 9:16 video's is 720×1280. Its bit rate is the table's for 16:9, scaled by the
/// rung's pixel count against the 16:9 picture's. Rungs taller than the source are dropped
/// (never upscaled); a source smaller than the lowest rung gets one rendition at its own size.
/// Rungs the table marks "≤ 30 fps" halve a faster source's frame rate.
public enum Ladder {
    public enum Codec: String, Sendable, Hashable, CaseIterable {
        case h264
        case hevc
    }

    /// A row of a table: the short side, the 16:9 bit rate, and whether it is capped at 30 fps.
    public struct Rung: Sendable, Hashable {
        public var name: String
        public var shortSide: Int
        public var bitRate: Int
        public var atMost30fps: Bool

        public init(name: String, shortSide: Int, bitRate: Int, atMost30fps: Bool = false) {
            self.name = name
            self.shortSide = shortSide
            self.bitRate = bitRate
            self.atMost30fps = atMost30fps
        }
    }

    /// The rungs of `codec`, lowest first. H.264: Apple's 16:9 table with one bit rate per size
    /// (the higher of two where it gives two), and `480p`, which Apple's table lacks, at the
    /// bit rate between its neighbours by pixel count. HEVC: Apple's HEVC table likewise.
    public static func table(_ codec: Codec) -> [Rung] {
        switch codec {
        case .h264:
            [
                Rung(name: "234p", shortSide: 234, bitRate: 145_000, atMost30fps: true),
                Rung(name: "360p", shortSide: 360, bitRate: 365_000, atMost30fps: true),
                Rung(name: "432p", shortSide: 432, bitRate: 1_100_000, atMost30fps: true),
                Rung(name: "480p", shortSide: 480, bitRate: 1_500_000),
                Rung(name: "540p", shortSide: 540, bitRate: 2_000_000),
                Rung(name: "720p", shortSide: 720, bitRate: 4_500_000),
                Rung(name: "1080p", shortSide: 1080, bitRate: 7_800_000),
            ]
        case .hevc:
            [
                Rung(name: "360p", shortSide: 360, bitRate: 145_000, atMost30fps: true),
                Rung(name: "432p", shortSide: 432, bitRate: 300_000, atMost30fps: true),
                Rung(name: "540p", shortSide: 540, bitRate: 1_600_000),
                Rung(name: "720p", shortSide: 720, bitRate: 3_400_000),
                Rung(name: "1080p", shortSide: 1080, bitRate: 5_800_000),
                Rung(name: "1440p", shortSide: 1440, bitRate: 8_100_000),
                Rung(name: "2160p", shortSide: 2160, bitRate: 16_800_000),
            ]
        }
    }

    /// The source as it is shown: its display size (after rotation and the sample aspect
    /// ratio) and frame rate (`nil`: unknown, variable).
    public struct Source: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public var frameRate: Double?

        public init(width: Int, height: Int, frameRate: Double?) {
            self.width = width
            self.height = height
            self.frameRate = frameRate
        }
    }

    /// One rendition to encode.
    public struct Rendition: Sendable, Hashable {
        public var name: String
        public var width: Int
        public var height: Int
        public var bitRate: Int
        /// `nil`: the source's.
        public var frameRate: Double?
    }

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case unknownRung(String, known: [String])
        case empty
        case emptyName(String)
        case noPicture

        public var description: String {
            switch self {
            case .unknownRung(let name, let known):
                "unknown rung '\(name)': the ladder's rungs are \(known.joined(separator: ", ")), or auto"
            case .empty: "a ladder names at least one rung, or auto"
            case .emptyName(let text): "'\(text)' has an empty rung name (two commas, or one at an end)"
            case .noPicture: "the source has no picture size"
            }
        }
    }

    /// `auto`, or rung names separated by commas (`1080p,720p,480p`), as given to `--ladder`.
    public static func renditions(
        _ ladder: String,
        codec: Codec,
        source: Source
    ) throws(Problem) -> (renditions: [Rendition], dropped: [String]) {
        let rungs: [Rung]
        if ladder == "auto" {
            rungs = table(codec)
        } else {
            rungs = try names(ladder, codec: codec)
        }
        return try renditions(rungs, source: source)
    }

    /// The rungs `text` names, in table order, each once.
    public static func names(_ text: String, codec: Codec) throws(Problem) -> [Rung] {
        let table = table(codec)
        let asked = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard !asked.allSatisfy(\.isEmpty) else { throw .empty }
        guard !asked.contains(where: \.isEmpty) else { throw .emptyName(text) }
        for name in asked where !table.contains(where: { $0.name == name }) {
            throw .unknownRung(name, known: table.map(\.name))
        }
        return table.filter { asked.contains($0.name) }
    }

    /// `rungs` sized for `source`, lowest first; the names of those dropped as taller than it
    /// (every one of them for a source smaller than them all, which gets one rendition at its
    /// own size instead).
    public static func renditions(
        _ rungs: [Rung],
        source: Source
    ) throws(Problem) -> (renditions: [Rendition], dropped: [String]) {
        guard source.width > 0, source.height > 0 else { throw .noPicture }
        let short = min(source.width, source.height)
        let fits = rungs.filter { $0.shortSide <= short }
        let dropped = rungs.filter { $0.shortSide > short }.map(\.name)
        if fits.isEmpty, let lowest = rungs.min(by: { $0.shortSide < $1.shortSide }) {
            // Smaller than every rung: one rendition at the source's own (even) size.
            let own = Rung(name: "\(even(Double(short)))p", shortSide: even(Double(short)), bitRate: 0)
            var rendition = sized(own, source: source)
            rendition.bitRate = scaled(
                lowest.bitRate,
                width: rendition.width,
                height: rendition.height,
                short: lowest.shortSide
            )
            rendition.frameRate = frameRate(lowest, source: source)
            // Every rung was taller than the source, the lowest too: all are dropped (the
            // rendition is named by its own size).
            return ([rendition], dropped)
        }
        return (fits.sorted { $0.shortSide < $1.shortSide }.map { sized($0, source: source) }, dropped)
    }

    static func sized(_ rung: Rung, source: Source) -> Rendition {
        let landscape = source.width >= source.height
        let ratio = Double(max(source.width, source.height)) / Double(min(source.width, source.height))
        let long = even(Double(rung.shortSide) * ratio)
        let (width, height) = landscape ? (long, rung.shortSide) : (rung.shortSide, long)
        return Rendition(
            name: rung.name,
            width: width,
            height: height,
            bitRate: scaled(rung.bitRate, width: width, height: height, short: rung.shortSide),
            frameRate: frameRate(rung, source: source)
        )
    }

    /// `bitRate` (for a 16:9 picture of short side `short`) for a `width`×`height` picture.
    static func scaled(_ bitRate: Int, width: Int, height: Int, short: Int) -> Int {
        let reference = Double(even(Double(short) * 16 / 9) * short)
        return Int((Double(bitRate) * Double(width * height) / reference / 1000).rounded()) * 1000
    }

    static func frameRate(_ rung: Rung, source: Source) -> Double? {
        guard rung.atMost30fps, let rate = source.frameRate, rate > 30.5 else { return nil }
        return rate / 2
    }

    static func even(_ value: Double) -> Int { max(2, Int((value / 2).rounded()) * 2) }
}
