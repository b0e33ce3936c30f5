import CFFmpeg

extension AssetTrack {
    /// What the track says of its colour, as one value (`ColorPath` decides by it).
    public var color: VideoColor {
        VideoColor(
            primaries: colorPrimaries,
            transfer: colorTransfer,
            matrix: colorSpace,
            range: colorRange,
            bitDepth: bitDepth,
            masteringDisplay: masteringDisplay,
            contentLightLevel: contentLightLevel,
            dolbyVision: dolbyVision
        )
    }

    /// Interlaced pictures (broadcast, DV, camcorders): what the stream's field order says.
    public var isInterlaced: Bool { fieldOrder.map { $0 != "progressive" } ?? false }

    /// ffprobe's name of a field order (`nil`: unknown).
    static func fieldOrderName(_ order: AVFieldOrder) -> String? {
        switch order {
        case AV_FIELD_PROGRESSIVE: "progressive"
        case AV_FIELD_TT: "tt"
        case AV_FIELD_BB: "bb"
        case AV_FIELD_TB: "tb"
        case AV_FIELD_BT: "bt"
        default: nil
        }
    }

    /// The stream's mastering display (`mdcv`, Matroska's `MasteringMetadata`), when it has
    /// the primaries and the luminance.
    static func masteringDisplay(of stream: UnsafeMutablePointer<AVStream>) -> MasteringDisplay? {
        var size = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_MASTERING_DISPLAY_METADATA, &size),
            size >= MemoryLayout<AVMasteringDisplayMetadata>.size
        else { return nil }
        let metadata = UnsafeRawPointer(data).loadUnaligned(as: AVMasteringDisplayMetadata.self)
        return MasteringDisplay(metadata)
    }

    /// The stream's content light level (`clli`, Matroska's `MaxCLL`/`MaxFALL`).
    static func contentLightLevel(of stream: UnsafeMutablePointer<AVStream>) -> ContentLightLevel? {
        var size = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_CONTENT_LIGHT_LEVEL, &size),
            size >= MemoryLayout<AVContentLightMetadata>.size
        else { return nil }
        return ContentLightLevel(UnsafeRawPointer(data).loadUnaligned(as: AVContentLightMetadata.self))
    }

    /// The stream's Dolby Vision configuration record (`dvcC`, `dvvC`).
    static func dolbyVision(of stream: UnsafeMutablePointer<AVStream>) -> DolbyVisionConfiguration? {
        var size = 0
        guard let data = av_stream_get_side_data(stream, AV_PKT_DATA_DOVI_CONF, &size),
            size >= MemoryLayout<AVDOVIDecoderConfigurationRecord>.size
        else { return nil }
        let record = UnsafeRawPointer(data).loadUnaligned(as: AVDOVIDecoderConfigurationRecord.self)
        return DolbyVisionConfiguration(
            profile: Int(record.dv_profile),
            level: Int(record.dv_level),
            hasRPU: record.rpu_present_flag != 0,
            hasEnhancementLayer: record.el_present_flag != 0,
            hasBaseLayer: record.bl_present_flag != 0,
            compatibilityID: Int(record.dv_bl_signal_compatibility_id)
        )
    }
}

extension MasteringDisplay {
    /// From FFmpeg's record (stream or frame side data); `nil` unless it has both the
    /// primaries and the luminance.
    init?(_ metadata: AVMasteringDisplayMetadata) {
        guard metadata.has_primaries != 0, metadata.has_luminance != 0 else { return nil }
        func point(_ pair: (AVRational, AVRational)) -> Chromaticity {
            Chromaticity(x: Self.rounded(pair.0.double), y: Self.rounded(pair.1.double))
        }
        let primaries = metadata.display_primaries
        self.init(
            red: point((primaries.0.0, primaries.0.1)),
            green: point((primaries.1.0, primaries.1.1)),
            blue: point((primaries.2.0, primaries.2.1)),
            whitePoint: point((metadata.white_point.0, metadata.white_point.1)),
            minLuminance: Self.rounded(metadata.min_luminance.double),
            maxLuminance: Self.rounded(metadata.max_luminance.double)
        )
    }

    /// To the precision the SEI and `mdcv` code (0.00002 and 0.0001), so JSON reads clean.
    private static func rounded(_ value: Double) -> Double { (value * 100_000).rounded() / 100_000 }
}

extension ContentLightLevel {
    init?(_ metadata: AVContentLightMetadata) {
        guard metadata.MaxCLL > 0 || metadata.MaxFALL > 0 else { return nil }
        self.init(maxContent: Int(metadata.MaxCLL), maxAverage: Int(metadata.MaxFALL))
    }
}
