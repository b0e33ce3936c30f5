import ArgumentParser
import Foundation
import JobctlCore
import Media
import Queue

extension JobKind: ExpressibleByArgument {
    /// `noop` exists for `jobctl bench`; it is not offered.
    public static var allValueStrings: [String] { ["export", "thumbnails", "storyboard", "waveform"] }
}

/// `submit --kind`: what each kind stores with the job (the preset, or the kind's options as
/// `presetSettings`), where its output goes by default, and the checks made before queueing.
extension SubmitCommand {
    /// What a job of this kind is submitted with.
    struct Work {
        /// The preset's name (exports) or the kind's name.
        var preset: String
        /// The preset's settings, or the kind's options (`ThumbnailOptions`…), as JSON.
        var settings: JSONValue
        /// The container of an export (`nil`: from the output's extension or the preset).
        var format: String?
        var defaultOutput: String
    }

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
        if let output {
            // {name} goes in a remote URL's path (the query is the signature, shown nowhere).
            let path = output.split(separator: "?", maxSplits: 1).first.map(String.init) ?? output
            let inPath = MediaLocation.isRemote(output) && path.contains("{name}")
            if output.contains("{name}") && !(kind.writesFileSet && inPath) {
                throw ValidationError(
                    kind.writesFileSet
                        ? "{name} belongs in the path of a remote --output, e.g. 'https://bucket.example/out/{name}?sig=...'"
                        : "{name} in --output is for thumbnails, storyboard and waveform jobs"
                )
            }
            if kind.writesFileSet && MediaLocation.isRemote(output) && !inPath {
                throw ValidationError(
                    "a \(kind) job writes several files: a remote --output is a URL template with {name}, e.g. 'https://bucket.example/out/{name}'"
                )
            }
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

    /// The preset or options to store, and the default output; checks a local input's tracks.
    func work(input: String) async throws -> Work {
        let imageFormat = format.flatMap { ImageFormat(name: $0) } ?? .jpeg
        switch kind {
        case .export, .noop:
            let preset = try presets.catalog().preset(named: preset ?? "")
            let container = format.flatMap { ContainerFormat(rawValue: $0) }
            return Work(
                preset: preset.name,
                settings: try Self.json(preset),
                format: container?.rawValue,
                defaultOutput: Self.defaultOutput(for: input, preset: preset, format: container)
            )
        case .thumbnails:
            let options = thumbnails.options(format: imageFormat)
            return try fileSet(input, options) { asset, range throws(MediaError) in
                _ = try ThumbnailSession(asset: asset, options: options, timeRange: range)
            }
        case .storyboard:
            let options = storyboard.options(format: imageFormat)
            return try fileSet(input, options) { asset, range throws(MediaError) in
                _ = try StoryboardSession(asset: asset, options: options, timeRange: range)
            }
        case .waveform:
            var options = waveform.options
            let files = try waveformFiles()
            options.json = files.json
            options.dat = files.dat
            options.png = files.png ? waveform.picture : nil
            return try fileSet(input, options) { [options] asset, range throws(MediaError) in
                _ = try WaveformReader(asset: asset, options: options, timeRange: range)
            }
        }
    }

    /// A file-set kind's work: its options, a directory beside the input, the input checked
    /// by building the kind's session (`check`) when it is local.
    private func fileSet(
        _ input: String,
        _ options: some Encodable,
        check: (Asset, TimeRange) throws(MediaError) -> Void
    ) throws -> Work {
        try checkLocalInput(input, check)
        return Work(
            preset: kind.rawValue,
            settings: try Self.json(options),
            defaultOutput: Self.besideInput(input, suffix: kind.rawValue)
        )
    }

    /// Opens a local input that exists and lets `check` refuse it: no video track for images,
    /// no audio for a waveform (`input_unsupported`), a sprite or a waveform too large
    /// (`limit_exceeded`). Anything else — a missing or unreadable file, or an image encoder
    /// this host's FFmpeg lacks (the workers' may have it) — is left for the job to report.
    private func checkLocalInput(_ input: String, _ check: (Asset, TimeRange) throws(MediaError) -> Void) throws {
        guard !MediaLocation.isRemote(input) else { return }
        let path = input.lowercased().hasPrefix("file://") ? (URL(string: input)?.path ?? input) : input
        guard FileManager.default.fileExists(atPath: path), let asset = try? Asset(location: input) else { return }
        let timeRange = try RangeArgument.timeRange(range)
        do throws(MediaError) {
            try check(asset, timeRange)
        } catch  where [.inputUnsupported, .limitExceeded, .presetUnknown].contains(error.code) {
            throw error
        } catch {
            return
        }
    }

    /// A set's output directory: missing (the worker creates it) or a real directory.
    static func checkDirectory(_ path: String) throws(MediaError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw MediaError(
                .outputForbidden,
                "\(path) exists and is not a directory (a symbolic link is refused too): the files go into a directory"
            )
        }
    }

    private static func json(_ value: some Encodable) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }
}
