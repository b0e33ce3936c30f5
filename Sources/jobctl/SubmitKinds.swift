import ArgumentParser
import Foundation
import JobctlCore
import Media
import Queue
import Submission

extension JobKind: ExpressibleByArgument {
    /// `noop` exists for `jobctl bench`; it is not offered.
    public static var allValueStrings: [String] { ["export", "thumbnails", "storyboard", "waveform"] }
}

/// `submit --kind`: what each kind stores with the job (the preset, or the kind's options as
/// `presetSettings`), where its output goes by default, and the checks made before queueing.
extension SubmitCommand {
    /// The options that belong to one kind, each with whether it was given.
    private var kindOptions: [(option: String, kind: JobKind, given: Bool)] {
        [
            ("--at", .thumbnails, thumbnails.at != nil), ("--every", .thumbnails, thumbnails.every != nil),
            ("--count", .thumbnails, thumbnails.count != nil), ("--exact", .thumbnails, thumbnails.exact),
            ("--tolerance", .thumbnails, thumbnails.tolerance != nil), ("--size", .thumbnails, thumbnails.size != nil),
            ("--tiles", .storyboard, storyboard.tiles != nil), ("--tile-size", .storyboard, storyboard.tileSize != nil),
            ("--columns", .storyboard, storyboard.columns != nil),
            ("--samples-per-pixel", .waveform, waveform.samplesPerPixel != nil),
            ("--pixels-per-second", .waveform, waveform.pixelsPerSecond != nil),
            ("--split-channels", .waveform, waveform.splitChannels), ("--track", .waveform, waveform.track != nil),
            ("--bits", .waveform, waveform.bits != nil), ("--width", .waveform, waveform.width != nil),
            ("--height", .waveform, waveform.height != nil), ("--color", .waveform, waveform.color != nil),
            ("--background", .waveform, waveform.background != nil), ("--files", .waveform, files != nil),
            ("--preset", .export, preset != nil),
        ]
    }

    func validateKind() throws {
        guard kind != .noop else { throw ValidationError("--kind is export, thumbnails, storyboard or waveform") }
        if kind == .export && preset == nil { throw ValidationError("an export needs --preset (see `jobctl presets`)") }
        for option in kindOptions where option.given && option.kind != kind {
            throw ValidationError("\(option.option) is for --kind \(option.kind), not \(kind)")
        }
        switch kind {
        case .export:
            if let format, ContainerFormat(rawValue: format) == nil {
                throw ValidationError("--format for an export is mp4, mov or m4a, not '\(format)'")
            }
        case .thumbnails, .storyboard:
            if let format, ImageFormat(name: format) == nil {
                throw ValidationError("--format for \(kind) is jpg, png or webp, not '\(format)'")
            }
        case .waveform:
            if format != nil { throw ValidationError("a waveform has no --format: choose its files with --files") }
            _ = try waveformFiles()
        case .noop:
            break
        }
        if kind == .waveform, !(files ?? "json").lowercased().contains("png"),
            waveform.width != nil || waveform.height != nil || waveform.color != nil || waveform.background != nil
        {
            throw ValidationError("--width, --height, --color and --background are for the PNG: add png to --files")
        }
        if let output, let problem = Submission.outputProblem(output, kind: kind, name: "--output") {
            throw ValidationError(problem)
        }
    }

    /// `--files json,dat,png` → the waveform options' file switches.
    private func waveformFiles() throws -> (json: Bool, dat: Bool, png: Bool) {
        let names = (files ?? "json").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        for name in names where !["json", "dat", "png"].contains(name) {
            throw ValidationError("--files lists json, dat and png, not '\(name)'")
        }
        guard !names.isEmpty else { throw ValidationError("--files lists at least one of json, dat, png") }
        return (names.contains("json"), names.contains("dat"), names.contains("png"))
    }

    /// What the options ask for, as the API builds it from JSON.
    func recipe() throws -> JobRecipe {
        let imageFormat = format.flatMap { ImageFormat(name: $0) } ?? .jpeg
        switch kind {
        case .export, .noop:
            return .export(
                try presets.catalog().preset(named: preset ?? ""),
                container: format.flatMap { ContainerFormat(rawValue: $0) }
            )
        case .thumbnails:
            return .thumbnails(thumbnails.options(format: imageFormat))
        case .storyboard:
            return .storyboard(storyboard.options(format: imageFormat))
        case .waveform:
            var options = waveform.options
            let files = try waveformFiles()
            options.json = files.json
            options.dat = files.dat
            options.png = files.png ? waveform.picture : nil
            return .waveform(options)
        }
    }
}
