import Foundation
import JobctlCore
import Streaming

/// What a ladder job is asked for: which rungs, which codec. The segment and keyframe spacing
/// are fixed (6 s segments, an IDR every 2 s), after Apple's HLS authoring specification.
public struct LadderOptions: Sendable, Hashable, Codable {
    /// `auto`, or rung names separated by commas (`1080p,720p,480p`).
    public var ladder: String
    public var codec: Ladder.Codec
    /// Custom rungs (a ladder of the presets file); `nil`: the codec's table.
    public var rungs: [Ladder.Rung]?

    public static let segmentSeconds = 6
    public static let keyframeSeconds = 2

    public init(ladder: String = "auto", codec: Ladder.Codec = .h264, rungs: [Ladder.Rung]? = nil) {
        self.ladder = ladder
        self.codec = codec
        self.rungs = rungs
    }

    /// `invalid_request` for an unknown rung or an empty list.
    public func check() throws(MediaError) {
        if rungs != nil { return }
        guard ladder != "auto" else { return }
        do { _ = try Ladder.names(ladder, codec: codec) } catch {
            throw MediaError(.invalidRequest, "--ladder: \(error)")
        }
    }
}

extension Ladder.Codec: Codable {}

extension Ladder.Rung: Codable {
    enum CodingKeys: String, CodingKey {
        case name
        case shortSide = "short_side"
        case bitRate = "bitrate"
        case atMost30fps = "at_most_30fps"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            shortSide: try container.decode(Int.self, forKey: .shortSide),
            bitRate: try container.decode(Int.self, forKey: .bitRate),
            atMost30fps: try container.decodeIfPresent(Bool.self, forKey: .atMost30fps) ?? false
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(shortSide, forKey: .shortSide)
        try container.encode(bitRate, forKey: .bitRate)
        try container.encode(atMost30fps, forKey: .atMost30fps)
    }
}

/// One worker's share of a ladder split across a fleet (`--split`): a span of whole segments;
/// the ladder's one part type, stored in a child's role.
public struct LadderChunk: Sendable, Hashable, Codable {
    public var index: Int
    /// Where the chunk's first frame is, µs from the range's start: keyframes are forced on the
    /// whole ladder's 2 s grid.
    public var offset: Int64
    /// The number of its first segment in the ladder (segments are 6 s: 1 + offset / 6 s).
    public var firstSegment: Int
    /// Where the next chunk's first frame is (µs from the range's start): this chunk's last
    /// frame lasts until then. `nil`: the last chunk.
    public var end: Int64?

    public init(index: Int, offset: Int64, firstSegment: Int, end: Int64? = nil) {
        self.index = index
        self.offset = offset
        self.firstSegment = firstSegment
        self.end = end
    }
}

extension LadderChunk {
    /// A chunk as its child wrote it, as the join takes it: where its files are, and its
    /// range (to encode it again when its files are gone).
    public struct Written: Sendable, Hashable {
        public var directory: String
        public var chunk: LadderChunk
        public var range: TimeRange
        /// The files the chunk's job said it wrote, with their sizes (its result's `files`).
        public var files: [String: Int64]

        public init(directory: String, chunk: LadderChunk, range: TimeRange, files: [String: Int64] = [:]) {
            self.directory = directory
            self.chunk = chunk
            self.range = range
            self.files = files
        }
    }
}

extension LadderSession {
    /// What a session makes of its ladder (not a part type: the part is `LadderChunk`): the
    /// whole ladder; one chunk of its video (no sound); or the join: the sound encoded here,
    /// the video taken from the chunks' directories in order.
    public enum Scope: Sendable, Hashable {
        case whole
        case chunk(LadderChunk)
        case join(chunks: [LadderChunk.Written])

        var encodesVideo: Bool { if case .join = self { false } else { true } }
        var encodesAudio: Bool { if case .chunk = self { false } else { true } }
        var chunk: LadderChunk? { if case .chunk(let chunk) = self { chunk } else { nil } }
    }
}

/// A ladder made ready for one asset: the renditions it gets, the audio rendition, and every
/// reason it cannot be made, found before anything is decoded.
struct LadderPlan {
    var video: AssetTrack?
    var renditions: [Ladder.Rendition]
    var dropped: [String]
    var audio: AssetTrack?
    var audioSampleRate = 48000
    var audioChannels = 2
    /// The ladder is SDR: an HDR source is tone-mapped once, before the renditions are scaled
    /// from the top picture (`ColorPath.picture`; HDR rungs are not made yet).
    var color: ColorPath = .standard

    var audioBitRate: Int { audioChannels == 1 ? 64_000 : 128_000 }

    init(asset: Asset, options: LadderOptions) throws(MediaError) {
        let name = asset.displayName
        try options.check()
        video = asset.primaryVideoTrack.flatMap { $0.isDecodable && $0.codec != "none" ? $0 : nil }
        audio = asset.audioTracks.first { $0.isDecodable && $0.codec != "none" }
        guard video != nil || audio != nil else {
            throw MediaError(.inputUnsupported, "\(name) has no audio or video track that can be decoded")
        }
        if let encrypted = [video, audio].compactMap({ $0 }).first(where: { $0.isEncrypted == true }) {
            throw MediaError(
                .inputUnsupported,
                "\(encrypted.mediaType) track \(encrypted.index) of \(name) is encrypted (DRM): jobctl cannot decrypt it"
            )
        }
        renditions = []
        dropped = []
        if let video {
            guard let encoder = options.codec == .hevc ? "libx265" : "libx264", CodecEncoder.isAvailable(encoder)
            else {
                throw MediaError(.presetIncompatible, "this FFmpeg build has no \(options.codec) encoder")
            }
            guard let width = video.width, let height = video.height, width > 0, height > 0 else {
                throw MediaError(.inputUnsupported, "video track \(video.index) of \(name) has no picture size")
            }
            color = try ColorPath.picture(video.color, track: "video track \(video.index) of \(name)")
            if let error = asset.limits.pictureTooLarge(
                width: width,
                height: height,
                what: "video track \(video.index) of \(name)"
            ) {
                throw error
            }
            let sar = Self.ratio(video.sampleAspectRatio) ?? (1, 1)
            let display = Fit.displaySize(width: width, height: height, sar: sar, rotation: video.rotation ?? 0)
            let source = Ladder.Source(
                width: Int(display.width.rounded()),
                height: Int(display.height.rounded()),
                frameRate: video.frameRate
            )
            do {
                let planned =
                    if let rungs = options.rungs {
                        try Ladder.renditions(rungs, source: source)
                    } else {
                        try Ladder.renditions(options.ladder, codec: options.codec, source: source)
                    }
                (renditions, dropped) = (planned.renditions, planned.dropped)
            } catch {
                throw MediaError(.invalidRequest, "--ladder: \(error)")
            }
            // x265 refuses pictures of 8 pixels or fewer on a side.
            if options.codec == .hevc, let small = renditions.first(where: { min($0.width, $0.height) < 16 }) {
                throw MediaError(
                    .presetIncompatible,
                    "HEVC needs pictures of at least 16 pixels on each side, and \(name)'s \(small.name) rendition is \(small.width)x\(small.height): use --codec h264"
                )
            }
        }
        if let audio {
            audioChannels = min(2, max(1, audio.channels ?? 2))
            let rate = audio.sampleRate ?? 48000
            audioSampleRate = Preset.aacSampleRates.min { abs($0 - rate) < abs($1 - rate) } ?? 48000
        }
    }

    /// One picture's time at the source's frame rate (µs; 40 ms when it has none).
    var frameMicroseconds: Int64 {
        guard let rate = video?.frameRateRational, rate.num > 0, rate.den > 0 else { return 40_000 }
        return Int64(rate.den) * 1_000_000 / Int64(rate.num)
    }

    /// The largest rendition: what the reader scales the picture to, once.
    var top: Ladder.Rendition? { renditions.max { $0.width * $0.height < $1.width * $1.height } }

    private static func ratio(_ text: String?) -> (num: Int, den: Int)? {
        guard let parts = text?.split(separator: ":"), parts.count == 2, let num = Int(parts[0]),
            let den = Int(parts[1])
        else { return nil }
        return (num, den)
    }
}
