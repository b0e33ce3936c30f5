import Foundation

/// The dynamic range a picture is coded for, from its transfer characteristic: standard
/// (BT.709, BT.601, sRGB, unknown), Perceptual Quantizer (SMPTE ST 2084: HDR10, HDR10+,
/// Dolby Vision's HDR10-compatible base layer) or Hybrid Log-Gamma (ARIB STD-B67: broadcast
/// HDR, phones). The raw value is what HLS's `VIDEO-RANGE` says.
public enum DynamicRange: String, Sendable, Hashable, Codable, CaseIterable {
    case sdr = "SDR"
    case pq = "PQ"
    case hlg = "HLG"

    /// The range a transfer characteristic (FFmpeg's name: `smpte2084`, `arib-std-b67`,
    /// `bt709`…) codes; anything not PQ or HLG is SDR.
    public init(transfer: String?) {
        switch transfer {
        case "smpte2084": self = .pq
        case "arib-std-b67": self = .hlg
        default: self = .sdr
        }
    }

    public var isHDR: Bool { self != .sdr }

    /// FFmpeg's name of the transfer characteristic this range is coded with.
    public var transferName: String {
        switch self {
        case .sdr: "bt709"
        case .pq: "smpte2084"
        case .hlg: "arib-std-b67"
        }
    }
}

/// The colour volume of the display a picture was mastered on (SMPTE ST 2086, an HDR10
/// stream's `mdcv` box or SEI): chromaticities as CIE 1931 x, y and luminance in cd/m².
public struct MasteringDisplay: Sendable, Hashable, Codable {
    public struct Chromaticity: Sendable, Hashable, Codable {
        public var x: Double
        public var y: Double

        public init(x: Double, y: Double) {
            self.x = x
            self.y = y
        }
    }

    public var red: Chromaticity
    public var green: Chromaticity
    public var blue: Chromaticity
    public var whitePoint: Chromaticity
    public var minLuminance: Double
    public var maxLuminance: Double

    public init(
        red: Chromaticity,
        green: Chromaticity,
        blue: Chromaticity,
        whitePoint: Chromaticity,
        minLuminance: Double,
        maxLuminance: Double
    ) {
        self.red = red
        self.green = green
        self.blue = blue
        self.whitePoint = whitePoint
        self.minLuminance = minLuminance
        self.maxLuminance = maxLuminance
    }

    /// The form x265's `master-display` takes (and HEVC's SEI codes): `G(x,y)B(x,y)R(x,y)
    /// WP(x,y)L(max,min)`, chromaticities in units of 0.00002 and luminance of 0.0001 cd/m².
    public var x265Parameter: String {
        func point(_ c: Chromaticity) -> String {
            "(\(Int((c.x * 50000).rounded())),\(Int((c.y * 50000).rounded())))"
        }
        let luminance = "L(\(Int((maxLuminance * 10000).rounded())),\(Int((minLuminance * 10000).rounded())))"
        return "G\(point(green))B\(point(blue))R\(point(red))WP\(point(whitePoint))" + luminance
    }
}

/// An HDR10 stream's content light level (CTA-861.3): the brightest pixel and the brightest
/// frame average of the whole programme, cd/m².
public struct ContentLightLevel: Sendable, Hashable, Codable {
    /// MaxCLL.
    public var maxContent: Int
    /// MaxFALL.
    public var maxAverage: Int

    public init(maxContent: Int, maxAverage: Int) {
        self.maxContent = maxContent
        self.maxAverage = maxAverage
    }
}

/// A Dolby Vision stream's configuration record (`dvcC`/`dvvC`): its profile and whether its
/// base layer is something a device without Dolby Vision can show, and which.
public struct DolbyVisionConfiguration: Sendable, Hashable, Codable {
    public var profile: Int
    public var level: Int
    /// Whether the stream carries the reshaping metadata (RPU), an enhancement layer, a base layer.
    public var hasRPU: Bool
    public var hasEnhancementLayer: Bool
    public var hasBaseLayer: Bool
    /// `dv_bl_signal_compatibility_id`: 0 none (profile 5: IPTPQc2, shown wrong by anything
    /// but a Dolby Vision decoder), 1 HDR10, 2 SDR (BT.709), 4 HLG, 6 HDR10 (Blu-ray).
    public var compatibilityID: Int

    public init(
        profile: Int,
        level: Int,
        hasRPU: Bool,
        hasEnhancementLayer: Bool,
        hasBaseLayer: Bool,
        compatibilityID: Int
    ) {
        self.profile = profile
        self.level = level
        self.hasRPU = hasRPU
        self.hasEnhancementLayer = hasEnhancementLayer
        self.hasBaseLayer = hasBaseLayer
        self.compatibilityID = compatibilityID
    }

    /// What the base layer is to a device without Dolby Vision: the range it is coded for,
    /// or `nil` when it is nothing such a device can show (profile 5, compatibility 0).
    public var compatibleBase: DynamicRange? {
        guard hasBaseLayer else { return nil }
        switch compatibilityID {
        case 1, 6: return .pq
        case 2: return .sdr
        case 4: return .hlg
        default: return nil
        }
    }

    /// How people name it: `8.4` (profile 8, HLG-compatible base), `5`.
    public var name: String {
        profile == 8 && compatibilityID != 0 ? "\(profile).\(compatibilityID)" : "\(profile)"
    }
}

/// What a video track says of its colour, as `probe` shows it and the pipeline decides by it.
public struct VideoColor: Sendable, Hashable, Codable {
    /// FFmpeg's names (`bt2020`, `smpte2084`, `bt2020nc`, `tv`), when the stream says.
    public var primaries: String?
    public var transfer: String?
    public var matrix: String?
    public var range: String?
    /// Bits per sample of the decoded picture (8, 10, 12).
    public var bitDepth: Int?
    public var masteringDisplay: MasteringDisplay?
    public var contentLightLevel: ContentLightLevel?
    public var dolbyVision: DolbyVisionConfiguration?

    public init(
        primaries: String? = nil,
        transfer: String? = nil,
        matrix: String? = nil,
        range: String? = nil,
        bitDepth: Int? = nil,
        masteringDisplay: MasteringDisplay? = nil,
        contentLightLevel: ContentLightLevel? = nil,
        dolbyVision: DolbyVisionConfiguration? = nil
    ) {
        self.primaries = primaries
        self.transfer = transfer
        self.matrix = matrix
        self.range = range
        self.bitDepth = bitDepth
        self.masteringDisplay = masteringDisplay
        self.contentLightLevel = contentLightLevel
        self.dolbyVision = dolbyVision
    }

    /// The range the picture is coded for: its transfer; for a Dolby Vision stream whose
    /// transfer is not tagged, its base layer's (PQ for profile 5's, which has none a device
    /// without Dolby Vision can show).
    public var dynamicRange: DynamicRange {
        let tagged = DynamicRange(transfer: transfer)
        guard tagged == .sdr, let dolbyVision else { return tagged }
        return dolbyVision.compatibleBase ?? .pq
    }
}
