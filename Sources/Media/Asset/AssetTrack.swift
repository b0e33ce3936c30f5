import CFFmpeg

/// What a track holds.
public enum MediaType: String, Sendable, Hashable, Codable {
    case video, audio, subtitle, data, attachment, unknown

    init(_ type: AVMediaType) {
        switch type {
        case AVMEDIA_TYPE_VIDEO: self = .video
        case AVMEDIA_TYPE_AUDIO: self = .audio
        case AVMEDIA_TYPE_SUBTITLE: self = .subtitle
        case AVMEDIA_TYPE_DATA: self = .data
        case AVMEDIA_TYPE_ATTACHMENT: self = .attachment
        default: self = .unknown
        }
    }
}

/// One track of an asset and its properties (`AVAssetTrack`), as `jobctl probe` shows them.
/// Times are in seconds; absent properties are `nil` (omitted from JSON).
public struct AssetTrack: Sendable, Hashable, Codable {
    public var index: Int
    public var mediaType: MediaType
    public var codec: String
    public var codecLongName: String?
    public var profile: String?
    public var bitrate: Int?
    /// Seconds, as stored in the file (not relative to the asset's start).
    public var startTime: Double?
    public var duration: Double?
    public var language: String?
    /// The track's name (`title`: "Director's commentary", "English SDH"), when it has one.
    public var title: String?
    public var isDefault: Bool
    /// Whether FFmpeg has a decoder for it.
    public var isDecodable: Bool
    /// Encrypted (DRM: Common Encryption, WebM encryption): its packets cannot be decoded
    /// without a key jobctl does not have. `nil` when not.
    public var isEncrypted: Bool?
    /// The unit of the track's timestamps.
    public var timeBase: Rational

    // Video
    public var width: Int?
    public var height: Int?
    public var pixelFormat: String?
    /// Clockwise degrees to rotate the picture for display (0, 90, 180, 270).
    public var rotation: Int?
    /// Sample (pixel) aspect ratio, `num:den`.
    public var sampleAspectRatio: String?
    /// The size shown to a viewer: square pixels, rotation applied.
    public var displayWidth: Int?
    public var displayHeight: Int?
    /// Average frames per second.
    public var frameRate: Double?
    /// The same, exactly (`30000/1001`).
    public var frameRateRational: Rational?
    /// Colour description names (`bt709`), when the stream has them.
    public var colorPrimaries: String?
    public var colorTransfer: String?
    public var colorSpace: String?
    /// `tv` (limited) or `pc` (full), when the stream says.
    public var colorRange: String?
    /// How the pictures are scanned, as ffprobe names it: `progressive`, or interlaced `tt`
    /// (top field first), `bb` (bottom first), `tb`, `bt` (coded in one order, shown in the
    /// other); `nil` when the stream does not say.
    public var fieldOrder: String?
    /// Bits per sample of the decoded picture (8, 10, 12).
    public var bitDepth: Int?
    /// `SDR`, `PQ` or `HLG`: what the transfer codes (for Dolby Vision without a tagged
    /// transfer, its base layer); `nil` for a track that is not a picture.
    public var dynamicRange: DynamicRange?
    /// HDR10's static metadata, from the container (`mdcv`, `clli`, Matroska's colour
    /// element) or, when only the bitstream has it, the first picture's SEI.
    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
    /// A Dolby Vision stream's configuration record.
    public var dolbyVision: DolbyVisionConfiguration?
    /// A cover picture stored as a one-frame video track (not carried by exports).
    public var isAttachedPicture: Bool?

    // Audio
    public var sampleRate: Int?
    public var channels: Int?
    public var channelLayout: String?
    public var sampleFormat: String?
}

extension AssetTrack {
    init(stream: UnsafeMutablePointer<AVStream>) {
        let parameters = stream.pointee.codecpar.pointee
        let timeBase = stream.pointee.time_base
        index = Int(stream.pointee.index)
        mediaType = MediaType(parameters.codec_type)
        let descriptor = avcodec_descriptor_get(parameters.codec_id)
        codec = descriptor.map { String(cString: $0.pointee.name) } ?? "none"
        codecLongName = descriptor.flatMap { $0.pointee.long_name.map { String(cString: $0) } }
        profile = avcodec_profile_name(parameters.codec_id, parameters.profile).map { String(cString: $0) }
        bitrate = parameters.bit_rate > 0 ? Int(parameters.bit_rate) : nil
        startTime = stream.pointee.start_time != noPTS ? Double(stream.pointee.start_time) * timeBase.double : nil
        duration =
            stream.pointee.duration != noPTS && stream.pointee.duration > 0
                && !AssetTrack.isIndeterminate(stream.pointee.duration)
            ? Double(stream.pointee.duration) * timeBase.double : nil
        language = av_dict_get(stream.pointee.metadata, "language", nil, 0).map { String(cString: $0.pointee.value) }
        title = av_dict_get(stream.pointee.metadata, "title", nil, 0).map { String(cString: $0.pointee.value) }
        isDefault = stream.pointee.disposition & AV_DISPOSITION_DEFAULT != 0
        isDecodable = avcodec_find_decoder(parameters.codec_id) != nil
        // Matroska/WebM keeps the key id as a tag; MP4 (CENC) a `pssh` as side data.
        var size = 0
        let encrypted =
            av_dict_get(stream.pointee.metadata, "enc_key_id", nil, 0) != nil
            || av_stream_get_side_data(stream, AV_PKT_DATA_ENCRYPTION_INIT_INFO, &size) != nil
        isEncrypted = encrypted ? true : nil
        self.timeBase = Rational(timeBase)

        switch mediaType {
        case .video:
            width = Int(parameters.width)
            height = Int(parameters.height)
            pixelFormat = av_get_pix_fmt_name(AVPixelFormat(rawValue: parameters.format)).map { String(cString: $0) }
            let rotation = AssetTrack.rotation(of: stream)
            self.rotation = rotation
            let sar = AssetTrack.sampleAspect(of: stream)
            sampleAspectRatio = "\(sar.num):\(sar.den)"
            let display = Fit.displaySize(
                width: Int(parameters.width),
                height: Int(parameters.height),
                sar: sar,
                rotation: rotation
            )
            displayWidth = Int(display.width.rounded())
            displayHeight = Int(display.height.rounded())
            let rate =
                stream.pointee.avg_frame_rate.isValid ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
            frameRate = rate.isValid ? (rate.double * 1000).rounded() / 1000 : nil
            frameRateRational = rate.isValid ? Rational(rate) : nil
            if parameters.color_primaries != AVCOL_PRI_UNSPECIFIED {
                colorPrimaries = av_color_primaries_name(parameters.color_primaries).map { String(cString: $0) }
            }
            if parameters.color_trc != AVCOL_TRC_UNSPECIFIED {
                colorTransfer = av_color_transfer_name(parameters.color_trc).map { String(cString: $0) }
            }
            if parameters.color_space != AVCOL_SPC_UNSPECIFIED {
                colorSpace = av_color_space_name(parameters.color_space).map { String(cString: $0) }
            }
            if parameters.color_range != AVCOL_RANGE_UNSPECIFIED {
                colorRange = av_color_range_name(parameters.color_range).map { String(cString: $0) }
            }
            fieldOrder = AssetTrack.fieldOrderName(parameters.field_order)
            bitDepth = av_pix_fmt_desc_get(AVPixelFormat(rawValue: parameters.format)).map {
                Int($0.pointee.comp.0.depth)
            }
            masteringDisplay = AssetTrack.masteringDisplay(of: stream)
            contentLightLevel = AssetTrack.contentLightLevel(of: stream)
            dolbyVision = AssetTrack.dolbyVision(of: stream)
            dynamicRange = color.dynamicRange
            isAttachedPicture = stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0 ? true : nil
        case .audio:
            sampleRate = Int(parameters.sample_rate)
            channels = Int(parameters.ch_layout.nb_channels)
            var layout = parameters.ch_layout
            channelLayout = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 128) { buffer in
                av_channel_layout_describe(&layout, buffer.baseAddress, 128) > 0
                    ? String(cString: buffer.baseAddress!) : nil
            }
            sampleFormat = av_get_sample_fmt_name(AVSampleFormat(rawValue: parameters.format)).map {
                String(cString: $0)
            }
        default:
            break
        }
    }

    /// Clockwise display rotation from the stream's display matrix, snapped to 0/90/180/270
    /// (as the ffmpeg CLI's autorotate does).
    static func rotation(of stream: UnsafeMutablePointer<AVStream>) -> Int {
        var size: Int = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size), size >= 36 else { return 0 }
        let counterClockwise = data.withMemoryRebound(to: Int32.self, capacity: 9) { av_display_rotation_get($0) }
        return clockwiseQuarterTurn(counterClockwise: counterClockwise)
    }

    /// A display matrix's counter-clockwise angle (`av_display_rotation_get`, −180…180) as the
    /// clockwise turn to show the picture upright, snapped to the nearest quarter turn: 0, 90,
    /// 180 or 270. Normalised before snapping, so −90 (a phone held the other way) is 270 and
    /// ±180 are both 180 (integer division toward zero once made −90 into 0).
    static func clockwiseQuarterTurn(counterClockwise: Double) -> Int {
        guard counterClockwise.isFinite else { return 0 }
        let clockwise = (-counterClockwise).truncatingRemainder(dividingBy: 360)
        let normalised = clockwise < 0 ? clockwise + 360 : clockwise
        return Int((normalised / 90).rounded()) % 4 * 90
    }

    /// Whether a stream's duration is ISO BMFF's "indeterminate" (all ones in a 32-bit field:
    /// fragmented MP4 from live recorders and packagers), which FFmpeg 5.1 reads as 2^32 − 1
    /// units (143,165 s at 30,000 a second) rather than as unknown.
    static func isIndeterminate(_ duration: Int64) -> Bool { duration == Int64(UInt32.max) }

    /// The sample aspect ratio (stream, else codec), 1:1 when unknown.
    static func sampleAspect(of stream: UnsafeMutablePointer<AVStream>) -> (num: Int, den: Int) {
        let guessed = av_guess_sample_aspect_ratio(nil, stream, nil)
        guard guessed.isValid else { return (1, 1) }
        var num: Int32 = 0
        var den: Int32 = 0
        av_reduce(&num, &den, Int64(guessed.num), Int64(guessed.den), 1 << 20)
        return (Int(num), Int(den))
    }
}

/// An exact fraction (a time base, a frame rate), written `num/den` in JSON.
public struct Rational: Sendable, Hashable, Codable, CustomStringConvertible {
    public var num: Int
    public var den: Int

    public init(num: Int, den: Int) {
        self.num = num
        self.den = den
    }

    init(_ value: AVRational) { self.init(num: Int(value.num), den: Int(value.den)) }

    var av: AVRational { AVRational(num: Int32(num), den: Int32(den)) }

    public var description: String { "\(num)/\(den)" }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        let parts = text.split(separator: "/")
        guard parts.count == 2, let num = Int(parts[0]), let den = Int(parts[1]) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "expected num/den, got \(text)")
            )
        }
        self.init(num: num, den: den)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
