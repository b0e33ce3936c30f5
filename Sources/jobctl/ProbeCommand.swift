import ArgumentParser
import CommandLineSupport
import Foundation
import Media

struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show an input's container, duration and tracks (and, with --presets, which presets apply).",
        discussion: """
            Times are seconds. `rotation` is clockwise degrees to display the picture upright; \
            `displayWidth`/`displayHeight` apply it and the sample aspect ratio.
            """
    )

    @Argument(help: "A media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @Flag(
        name: .customLong("presets"),
        help: "Also tell which presets can export this input, and why the others cannot."
    )
    var checkPresets = false

    @Flag(help: "Print JSON on stdout.")
    var json = false

    @Option(name: .customLong("presets-file"), help: ArgumentHelp("A JSON file of custom presets.", valueName: "file"))
    var presetsFile: String?

    @OptionGroup(title: "Limits") var limits: LimitOptions
    @OptionGroup var global: GlobalOptions

    struct Report: Encodable {
        var input: String
        var container: String
        var containerLongName: String?
        var duration: Double?
        var startTime: Double
        var bitrate: Int?
        var size: Int64?
        var tracks: [AssetTrack]
        var presets: [PresetCheck]?
    }

    struct PresetCheck: Encodable {
        var name: String
        var compatible: Bool
        var code: String?
        var reason: String?
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let asset = try Asset(location: try ObjectStoreInput.openable(input), limits: limits.limits())
            var report = Report(
                input: input,
                container: asset.container,
                containerLongName: asset.containerLongName,
                duration: asset.durationSeconds,
                startTime: Double(asset.startTime) / 1_000_000,
                bitrate: asset.bitrate,
                size: asset.fileSize,
                tracks: asset.tracksWithPictureMetadata()
            )
            if checkPresets {
                let catalog = try PresetOptions.catalog(file: presetsFile)
                report.presets = catalog.presets.map { preset in
                    let problem = preset.incompatibility(with: asset)
                    return PresetCheck(
                        name: preset.name,
                        compatible: problem == nil,
                        code: problem?.code.rawValue,
                        reason: problem?.message
                    )
                }
            }
            if json { try Terminal.printJSON(report) } else { printReport(report) }
        }
    }

    /// What a person needs of a picture's colour: HDR and how, and its static metadata.
    static func colour(of track: AssetTrack) -> [String] {
        var parts: [String] = []
        if track.isInterlaced, let order = track.fieldOrder {
            // `tb`: coded top first, shown bottom first; `bt` the other way (FFmpeg's names).
            let first = order == "tt" || order == "bt" ? "top" : "bottom"
            parts.append("interlaced (\(first) field first)")
        }
        if let range = track.dynamicRange, range.isHDR {
            let described = [track.colorPrimaries, track.colorSpace].compactMap { $0 }.joined(separator: "/")
            parts.append("HDR \(range.rawValue)" + (described.isEmpty ? "" : " (\(described))"))
        }
        if let display = track.masteringDisplay {
            parts.append(
                String(format: "mastered at %g–%g cd/m²", display.minLuminance, display.maxLuminance)
            )
        }
        if let light = track.contentLightLevel {
            parts.append("MaxCLL \(light.maxContent), MaxFALL \(light.maxAverage) cd/m²")
        }
        if let dolbyVision = track.dolbyVision {
            let base: String
            switch dolbyVision.compatibleBase {
            case .pq?: base = "HDR10-compatible base layer"
            case .hlg?: base = "HLG-compatible base layer"
            case .sdr?: base = "SDR-compatible base layer"
            case nil: base = "no compatible base layer"
            }
            parts.append("Dolby Vision \(dolbyVision.name) (\(base))")
        }
        return parts
    }

    private func printReport(_ report: Report) {
        var header = "\(report.input): \(report.containerLongName ?? report.container)"
        if let duration = report.duration { header += ", \(Terminal.seconds(duration))" }
        if let size = report.size { header += ", \(Terminal.bytes(size))" }
        if let bitrate = report.bitrate { header += ", \(bitrate / 1000) kb/s" }
        if report.startTime != 0 { header += ", starts at \(Terminal.seconds(report.startTime))" }
        print(header)
        for track in report.tracks {
            var parts = ["\(track.mediaType): \(track.codec)" + (track.profile.map { " (\($0))" } ?? "")]
            if let width = track.width, let height = track.height {
                var size = "\(width)x\(height)"
                if let displayWidth = track.displayWidth, let displayHeight = track.displayHeight,
                    displayWidth != width || displayHeight != height
                {
                    size += " shown \(displayWidth)x\(displayHeight)"
                }
                parts.append(size)
            }
            if let rotation = track.rotation, rotation != 0 { parts.append("rotated \(rotation)°") }
            if let sar = track.sampleAspectRatio, sar != "1:1" { parts.append("SAR \(sar)") }
            if let rate = track.frameRate { parts.append(String(format: "%.3g fps", rate)) }
            if let format = track.pixelFormat { parts.append(format) }
            parts += Self.colour(of: track)
            if let rate = track.sampleRate { parts.append("\(rate) Hz") }
            if let layout = track.channelLayout ?? track.channels.map({ "\($0) ch" }) { parts.append(layout) }
            if let bitrate = track.bitrate { parts.append("\(bitrate / 1000) kb/s") }
            if let start = track.startTime { parts.append("starts \(Terminal.seconds(start))") }
            if let language = track.language { parts.append(language) }
            if track.isAttachedPicture == true { parts.append("cover picture") }
            if !track.isDecodable { parts.append("no decoder") }
            if track.isEncrypted == true { parts.append("encrypted") }
            print("  #\(track.index) " + parts.joined(separator: ", "))
        }
        if let presets = report.presets {
            print("presets:")
            for check in presets {
                print("  \(check.compatible ? "yes" : "no ") \(check.name)" + (check.reason.map { ": \($0)" } ?? ""))
            }
        }
    }
}
