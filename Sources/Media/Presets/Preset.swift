import Foundation

/// An export preset: the container and the settings of each kind of track (docs/spec.md §3).
///
/// The built-in table is `Preset.builtIn`; custom presets come from a JSON file with the same
/// fields (`presets --json`).
public struct Preset: Sendable, Hashable, Codable {
    public var name: String
    public var summary: String
    /// The container written when the output's extension or `--format` does not say otherwise.
    public var format: ContainerFormat
    /// Video settings; `nil` drops video (audio-only presets such as `m4a`).
    public var video: Video?
    /// Audio settings; `nil` drops audio.
    public var audio: Audio?

    public init(name: String, summary: String, format: ContainerFormat = .mp4, video: Video?, audio: Audio?) {
        self.name = name
        self.summary = summary
        self.format = format
        self.video = video
        self.audio = audio
    }

    public struct Video: Sendable, Hashable, Codable {
        public var codec: VideoCodec
        /// The box the picture must fit in (either orientation); `nil` keeps the source size.
        public var maxWidth: Int?
        public var maxHeight: Int?
        /// Target bitrate in bits per second (x264/x265 ABR), or
        public var bitrate: Int?
        /// constant quality (`crf`); neither: the encoder's default.
        public var crf: Int?
        /// The x264/x265 speed preset (`medium` when absent).
        public var encoderPreset: String?
        /// What an HDR source becomes (`--hdr`); `nil`: `auto` (HEVC keeps HDR, H.264
        /// tone-maps to SDR: `ColorPath.decide`).
        public var hdr: HDRMode?

        public init(
            codec: VideoCodec,
            maxWidth: Int? = nil,
            maxHeight: Int? = nil,
            bitrate: Int? = nil,
            crf: Int? = nil,
            encoderPreset: String? = nil,
            hdr: HDRMode? = nil
        ) {
            self.codec = codec
            self.maxWidth = maxWidth
            self.maxHeight = maxHeight
            self.bitrate = bitrate
            self.crf = crf
            self.encoderPreset = encoderPreset
            self.hdr = hdr
        }

        var box: (width: Int, height: Int)? {
            guard let maxWidth, let maxHeight else { return nil }
            return (maxWidth, maxHeight)
        }
    }

    public struct Audio: Sendable, Hashable, Codable {
        public var codec: AudioCodec
        /// At most this many channels: more are downmixed, fewer are kept (never upmixed).
        public var channels: Int?
        public var sampleRate: Int?
        /// Bits per second.
        public var bitrate: Int?

        public init(codec: AudioCodec, channels: Int? = nil, sampleRate: Int? = nil, bitrate: Int? = nil) {
            self.codec = codec
            self.channels = channels
            self.sampleRate = sampleRate
            self.bitrate = bitrate
        }
    }

    /// Whether every carried track is copied (`passthrough`): no decoding, keyframe-aligned start.
    public var isPassthrough: Bool {
        (video?.codec ?? .copy) == .copy && (audio?.codec ?? .copy) == .copy && (video != nil || audio != nil)
    }
}

public enum VideoCodec: String, Sendable, Hashable, Codable, CaseIterable {
    case h264
    case hevc
    case copy

    /// The FFmpeg encoder used for this codec.
    var encoderName: String? {
        switch self {
        case .h264: "libx264"
        case .hevc: "libx265"
        case .copy: nil
        }
    }
}

public enum AudioCodec: String, Sendable, Hashable, Codable, CaseIterable {
    case aac
    case copy

    var encoderName: String? {
        switch self {
        case .aac: "aac"
        case .copy: nil
        }
    }
}

/// The output container (`--format`).
public enum ContainerFormat: String, Sendable, Hashable, Codable, CaseIterable {
    case mp4
    case mov
    case m4a

    /// FFmpeg's muxer name.
    var muxerName: String {
        switch self {
        case .mp4: "mp4"
        case .mov: "mov"
        case .m4a: "ipod"
        }
    }

    /// `m4a` holds audio only: video is dropped.
    public var holdsVideo: Bool { self != .m4a }

    public var fileExtension: String { rawValue }

    /// The format an output path's extension names, if any.
    public init?(pathExtension: String) {
        switch pathExtension.lowercased() {
        case "mp4", "m4v": self = .mp4
        case "mov", "qt": self = .mov
        case "m4a": self = .m4a
        default: return nil
        }
    }
}

// MARK: - The built-in presets (docs/spec.md §3): the one table.

extension Preset {
    private static func box(_ name: String, _ width: Int, _ height: Int) -> Preset {
        Preset(
            name: name,
            summary: "H.264 fit inside \(width)x\(height), CRF 23; AAC stereo 128 kb/s",
            video: Video(codec: .h264, maxWidth: width, maxHeight: height, crf: 23),
            audio: stereo128
        )
    }

    private static func hevcBox(_ name: String, _ width: Int, _ height: Int) -> Preset {
        Preset(
            name: name,
            summary: "H.265 (hvc1) fit inside \(width)x\(height), CRF 28; AAC stereo 128 kb/s",
            video: Video(codec: .hevc, maxWidth: width, maxHeight: height, crf: 28),
            audio: stereo128
        )
    }

    private static let stereo128 = Audio(codec: .aac, channels: 2, sampleRate: 44100, bitrate: 128_000)

    public static let builtIn: [Preset] = [
        Preset(
            name: "low",
            summary: "H.264 fit inside 426x240 at about 300 kb/s; AAC mono 64 kb/s",
            video: Video(codec: .h264, maxWidth: 426, maxHeight: 240, bitrate: 300_000),
            audio: Audio(codec: .aac, channels: 1, sampleRate: 44100, bitrate: 64000)
        ),
        Preset(
            name: "medium",
            summary: "H.264 fit inside 854x480 at about 1.2 Mb/s; AAC stereo 96 kb/s",
            video: Video(codec: .h264, maxWidth: 854, maxHeight: 480, bitrate: 1_200_000),
            audio: Audio(codec: .aac, channels: 2, sampleRate: 44100, bitrate: 96000)
        ),
        Preset(
            name: "highest",
            summary: "H.264 at the source size, CRF 18; AAC stereo 128 kb/s",
            video: Video(codec: .h264, crf: 18),
            audio: stereo128
        ),
        box("640x480", 640, 480),
        box("960x540", 960, 540),
        box("1280x720", 1280, 720),
        box("1920x1080", 1920, 1080),
        box("3840x2160", 3840, 2160),
        hevcBox("hevc-1920x1080", 1920, 1080),
        hevcBox("hevc-3840x2160", 3840, 2160),
        Preset(
            name: "hevc-highest",
            summary: "H.265 (hvc1) at the source size, CRF 22; AAC stereo 128 kb/s",
            video: Video(codec: .hevc, crf: 22),
            audio: stereo128
        ),
        Preset(
            name: "passthrough",
            summary: "every track copied, no re-encoding; starts at the keyframe at or before the range start",
            video: Video(codec: .copy),
            audio: Audio(codec: .copy)
        ),
        Preset(
            name: "m4a",
            summary: "audio only: AAC stereo 128 kb/s, 44.1 kHz in .m4a",
            format: .m4a,
            video: nil,
            audio: stereo128
        ),
    ]
}
