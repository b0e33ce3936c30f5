import Foundation

/// `--hdr`: what an HDR source becomes in an encode. `auto` keeps HDR where the codec carries
/// it in our presets (HEVC: Main10, PQ or HLG) and tone-maps to SDR where it does not (H.264:
/// 8-bit); `keep` asks for HDR and refuses a preset that cannot hold it; `tonemap` makes SDR
/// whatever the codec.
public enum HDRMode: String, Sendable, Hashable, Codable, CaseIterable {
    case auto
    case keep
    case tonemap
}

/// What one encode does with a video track's colour, decided before anything is decoded
/// (a pure rule: `decide`).
public enum ColorPath: Sendable, Hashable {
    /// An SDR picture as it is: its tags passed on, as the ffmpeg CLI does.
    case standard
    /// PQ or HLG converted to BT.709 SDR: linearised, tone-mapped, BT.709 primaries and
    /// matrix, 8-bit, tagged `bt709` (`ToneMap`).
    case toneMap(from: DynamicRange)
    /// PQ or HLG kept: 10-bit, the transfer, primaries and matrix tagged, the mastering display
    /// and content light level passed on.
    case keep(DynamicRange)

    /// The range the encode's output is coded for.
    public var output: DynamicRange {
        if case .keep(let range) = self { range } else { .sdr }
    }

    /// The range a track's pictures are coded for, as a device without Dolby Vision sees them:
    /// its transfer, or for a Dolby Vision stream whose transfer is not tagged, its base
    /// layer's. Throws for a Dolby Vision stream with no base layer such a device can show
    /// (profile 5): its pictures decode to the wrong colours (IPTPQc2), so nothing made from
    /// them would be right.
    public static func sourceRange(of color: VideoColor, track: String) throws(MediaError) -> DynamicRange {
        if let dolbyVision = color.dolbyVision, dolbyVision.compatibleBase == nil {
            throw MediaError(
                .inputUnsupported,
                "\(track) is Dolby Vision profile \(dolbyVision.name) with no base layer a device without Dolby "
                    + "Vision can show (its colours decode wrong); export from the HDR10, HLG or SDR master instead"
            )
        }
        return color.dynamicRange
    }

    /// The path of an encode with `codec` of a track whose colour is `color`, under `mode`.
    ///
    /// - Throws: `input_unsupported` for Dolby Vision without a compatible base layer;
    ///   `preset_incompatible` for `keep` with a codec our presets encode in 8 bits.
    public static func decide(
        _ color: VideoColor,
        codec: VideoCodec,
        mode: HDRMode,
        track: String = "the video track"
    ) throws(MediaError) -> ColorPath {
        // A copy decodes nothing: the packets keep what they are (Dolby Vision included).
        guard codec != .copy else { return .standard }
        let range = try sourceRange(of: color, track: track)
        guard range.isHDR else { return .standard }
        switch (codec, mode) {
        case (_, .tonemap):
            return .toneMap(from: range)
        case (.hevc, .auto), (.hevc, .keep):
            return .keep(range)
        case (.h264, .keep):
            throw MediaError(
                .presetIncompatible,
                "--hdr keep needs a preset that encodes HDR (an hevc-* preset: 10-bit H.265); H.264 presets "
                    + "encode 8-bit SDR, so leave --hdr out (or --hdr tonemap) to tone-map \(track)"
            )
        case (.h264, .auto), (.copy, _):
            return .toneMap(from: range)
        }
    }

    /// The path of a still picture (a thumbnail, a storyboard tile, a seam score): always SDR.
    public static func picture(_ color: VideoColor, track: String = "the video track") throws(MediaError) -> ColorPath {
        let range = try sourceRange(of: color, track: track)
        return range.isHDR ? .toneMap(from: range) : .standard
    }
}
