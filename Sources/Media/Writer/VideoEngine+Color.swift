import CFFmpeg

extension VideoEngine {
    /// The encoder's pictures: 10 bits when HDR is kept, else 8.
    static func pixelFormat(for path: ColorPath) -> AVPixelFormat {
        if case .keep = path { return AV_PIX_FMT_YUV420P10LE }
        return AV_PIX_FMT_YUV420P
    }

    /// The colour description the encoder writes (the stream's VUI, then the container's
    /// `colr`): the source's as it is, as the ffmpeg CLI passes it on; BT.709 and limited range
    /// for tone-mapped pictures; for HDR kept, the source's with the transfer its range names
    /// (a Dolby Vision stream whose transfer was not tagged gets its base layer's).
    static func tagColor(_ context: UnsafeMutablePointer<AVCodecContext>, source: AssetTrack, path: ColorPath) {
        let names: (primaries: String?, transfer: String?, matrix: String?)
        switch path {
        case .standard: names = (source.colorPrimaries, source.colorTransfer, source.colorSpace)
        case .toneMap: names = ("bt709", "bt709", "bt709")
        case .keep(let range):
            names = (source.colorPrimaries ?? "bt2020", range.transferName, source.colorSpace ?? "bt2020nc")
        }
        if let name = names.primaries, case let value = av_color_primaries_from_name(name), value >= 0 {
            context.pointee.color_primaries = AVColorPrimaries(rawValue: UInt32(value))
        }
        if let name = names.transfer, case let value = av_color_transfer_from_name(name), value >= 0 {
            context.pointee.color_trc = AVColorTransferCharacteristic(rawValue: UInt32(value))
        }
        if let name = names.matrix, case let value = av_color_space_from_name(name), value >= 0 {
            context.pointee.colorspace = AVColorSpace(rawValue: UInt32(value))
        }
        switch path {
        case .standard: break
        case .toneMap: context.pointee.color_range = AVCOL_RANGE_MPEG
        // The scaler keeps the samples' range: a full-range source stays full range.
        case .keep: context.pointee.color_range = source.colorRange == "pc" ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG
        }
    }

    /// x265's HDR10 parameters for a PQ source: its mastering display and light level when it
    /// has them (`hdr10=1` writes them as SEI; `hdr10-opt` tunes quantisation for PQ).
    static func hdr10Parameters(of source: AssetTrack) -> String {
        var parameters = ":hdr10=1:hdr10-opt=1"
        if let display = source.masteringDisplay { parameters += ":master-display=\(display.x265Parameter)" }
        if let light = source.contentLightLevel { parameters += ":max-cll=\(light.maxContent),\(light.maxAverage)" }
        return parameters
    }
}
