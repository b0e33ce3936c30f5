import JobctlCore
import Testing

@testable import Media

/// The rule that decides what an encode does with a track's colour (`ColorPath.decide`), over
/// every source range, Dolby Vision configuration, codec and `--hdr` mode (issue 44).
@Suite("Colour paths")
struct ColorPathTests {
    /// Dolby Vision configurations as phones and discs write them (nil: none).
    static let dolbyVisions: [DolbyVisionConfiguration?] = [
        nil,
        dolbyVision(profile: 5, compatibility: 0),
        dolbyVision(profile: 7, compatibility: 6, enhancement: true),
        dolbyVision(profile: 8, compatibility: 1),
        dolbyVision(profile: 8, compatibility: 2),
        dolbyVision(profile: 8, compatibility: 4),
        dolbyVision(profile: 8, compatibility: 4, baseLayer: false),
    ]

    static func dolbyVision(
        profile: Int,
        compatibility: Int,
        enhancement: Bool = false,
        baseLayer: Bool = true
    ) -> DolbyVisionConfiguration {
        DolbyVisionConfiguration(
            profile: profile,
            level: 6,
            hasRPU: true,
            hasEnhancementLayer: enhancement,
            hasBaseLayer: baseLayer,
            compatibilityID: compatibility
        )
    }

    /// A source coded for `range`, as its stream tags it (`nil`: untagged).
    static func color(_ transfer: String?, _ dolbyVision: DolbyVisionConfiguration?) -> VideoColor {
        VideoColor(
            primaries: transfer == nil ? nil : "bt2020",
            transfer: transfer,
            matrix: transfer == nil ? nil : "bt2020nc",
            bitDepth: 10,
            dolbyVision: dolbyVision
        )
    }

    static let transfers: [String?] = [nil, "bt709", "smpte2084", "arib-std-b67", "smpte170m"]

    @Test("every source, codec and mode: the one expected path or the one expected refusal")
    func everyCombination() throws {
        var checked = 0
        for transfer in Self.transfers {
            for dolbyVision in Self.dolbyVisions {
                for codec in VideoCodec.allCases {
                    for mode in HDRMode.allCases {
                        let color = Self.color(transfer, dolbyVision)
                        let expected = Self.expected(transfer, dolbyVision, codec, mode)
                        let context = "\(transfer ?? "untagged") \(dolbyVision?.name ?? "no DV") \(codec) \(mode)"
                        switch expected {
                        case .success(let path):
                            #expect(try ColorPath.decide(color, codec: codec, mode: mode) == path, "\(context)")
                        case .failure(let refusal):
                            do {
                                let path = try ColorPath.decide(color, codec: codec, mode: mode)
                                Issue.record("\(context): \(path), not refused \(refusal.code)")
                            } catch {
                                #expect(error.code == refusal.code, "\(context): \(error)")
                            }
                        }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked == Self.transfers.count * Self.dolbyVisions.count * 3 * 3)
    }

    /// The rule written out another way: the source's range first, then codec and mode.
    static func expected(
        _ transfer: String?,
        _ dolbyVision: DolbyVisionConfiguration?,
        _ codec: VideoCodec,
        _ mode: HDRMode
    ) -> Result<ColorPath, ExpectedRefusal> {
        if codec == .copy { return .success(.standard) }
        let range: DynamicRange
        if let dolbyVision {
            // Profile 5, or a stream without its base layer: nothing a plain device shows.
            guard dolbyVision.hasBaseLayer, [1, 2, 4, 6].contains(dolbyVision.compatibilityID) else {
                return .failure(ExpectedRefusal(.inputUnsupported))
            }
            switch transfer {
            case "smpte2084": range = .pq
            case "arib-std-b67": range = .hlg
            default: range = [1: .pq, 6: .pq, 4: .hlg][dolbyVision.compatibilityID] ?? .sdr
            }
        } else {
            range = transfer == "smpte2084" ? .pq : transfer == "arib-std-b67" ? .hlg : .sdr
        }
        if range == .sdr { return .success(.standard) }
        switch (codec, mode) {
        case (.h264, .keep): return .failure(ExpectedRefusal(.presetIncompatible))
        case (.hevc, .auto), (.hevc, .keep): return .success(.keep(range))
        default: return .success(.toneMap(from: range))
        }
    }

    struct ExpectedRefusal: Error {
        var code: ErrorCode
        init(_ code: ErrorCode) { self.code = code }
    }

    @Test("a Dolby Vision profile 5 stream is refused naming its profile, and copied untouched")
    func profileFive() throws {
        let color = Self.color("smpte2084", Self.dolbyVision(profile: 5, compatibility: 0))
        do {
            _ = try ColorPath.decide(color, codec: .h264, mode: .auto, track: "video track 0")
            Issue.record("profile 5 was not refused")
        } catch {
            #expect(error.code == .inputUnsupported)
            #expect(error.message.contains("video track 0 is Dolby Vision profile 5"), "\(error.message)")
        }
        #expect(throws: MediaError.self) { try ColorPath.picture(color) }
        #expect(try ColorPath.decide(color, codec: .copy, mode: .tonemap) == .standard)
    }

    @Test("a still picture of an HDR source is always tone-mapped")
    func pictures() throws {
        #expect(try ColorPath.picture(Self.color("smpte2084", nil)) == .toneMap(from: .pq))
        #expect(try ColorPath.picture(Self.color("arib-std-b67", nil)) == .toneMap(from: .hlg))
        #expect(try ColorPath.picture(Self.color("bt709", nil)) == .standard)
        #expect(
            try ColorPath.picture(Self.color(nil, Self.dolbyVision(profile: 8, compatibility: 4)))
                == .toneMap(from: .hlg)
        )
    }

    @Test("Dolby Vision names and what their base layers are")
    func dolbyVisionNames() {
        #expect(Self.dolbyVision(profile: 8, compatibility: 4).name == "8.4")
        #expect(Self.dolbyVision(profile: 8, compatibility: 1).compatibleBase == .pq)
        #expect(Self.dolbyVision(profile: 8, compatibility: 2).compatibleBase == .sdr)
        #expect(Self.dolbyVision(profile: 5, compatibility: 0).name == "5")
        #expect(Self.dolbyVision(profile: 5, compatibility: 0).compatibleBase == nil)
    }

    @Test("x265's master-display parameter from a mastering display")
    func x265MasterDisplay() {
        // The values of the HDR10 test pattern x265's documentation uses (P3 D65, 1000 nits).
        let display = MasteringDisplay(
            red: .init(x: 0.68, y: 0.32),
            green: .init(x: 0.265, y: 0.69),
            blue: .init(x: 0.15, y: 0.06),
            whitePoint: .init(x: 0.3127, y: 0.329),
            minLuminance: 0.0001,
            maxLuminance: 1000
        )
        #expect(display.x265Parameter == "G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1)")
    }
}
