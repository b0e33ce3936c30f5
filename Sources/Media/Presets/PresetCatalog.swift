import Foundation

/// The presets a command can use: the built-in table, then those of a custom presets file
/// (`--presets FILE`, env `JOBCTL_PRESETS`).
public struct PresetCatalog: Sendable {
    public private(set) var presets: [Preset]

    public static let builtIn = PresetCatalog(presets: Preset.builtIn)

    private init(presets: [Preset]) { self.presets = presets }

    /// The built-in presets plus those of the JSON file at `path` (a list of objects with the
    /// fields of `presets --json`; `ffmpeg` is ignored).
    public init(customFile path: String?) throws(PresetFileError) {
        self = .builtIn
        guard let path else { return }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw PresetFileError(path: path, reason: "cannot be read (\(error.localizedDescription))")
        }
        let custom: [Preset]
        do {
            custom = try JSONDecoder().decode([Preset].self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw PresetFileError(path: path, reason: "a preset lacks '\(key.stringValue)' (at \(PresetCatalog.where(context)))")
        } catch let DecodingError.dataCorrupted(context) {
            throw PresetFileError(path: path, reason: "\(context.debugDescription) (at \(PresetCatalog.where(context)))")
        } catch let DecodingError.typeMismatch(_, context) where context.codingPath.isEmpty {
            throw PresetFileError(path: path, reason: "is not a JSON list of presets ([{\"name\": …}, …])")
        } catch let DecodingError.typeMismatch(_, context) {
            throw PresetFileError(path: path, reason: "\(context.debugDescription) (at \(PresetCatalog.where(context)))")
        } catch {
            throw PresetFileError(path: path, reason: "is not a JSON list of presets (\(error))")
        }
        for preset in custom {
            if let problem = preset.validationProblem {
                throw PresetFileError(path: path, reason: "preset '\(preset.name)': \(problem)")
            }
            guard !presets.contains(where: { $0.name == preset.name }) else {
                throw PresetFileError(path: path, reason: "preset '\(preset.name)' is defined twice or shadows a built-in preset")
            }
            presets.append(preset)
        }
    }

    private static func `where`(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "top level" : path
    }

    /// The preset called `name`, or `preset_unknown` listing the names there are.
    public func preset(named name: String) throws(MediaError) -> Preset {
        if let preset = presets.first(where: { $0.name == name }) { return preset }
        throw MediaError(.presetUnknown, "no preset named '\(name)' (known: \(presets.map(\.name).joined(separator: ", ")))")
    }
}

/// A custom presets file that cannot be used. A configuration error (exit 64).
public struct PresetFileError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String
    public var description: String { "presets file \(path): \(reason)" }
}

extension Preset {
    /// Why this (custom) preset cannot be used, or `nil`.
    var validationProblem: String? {
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            return "names use letters, digits, '-', '_' and '.'"
        }
        guard video != nil || audio != nil else { return "it has neither video nor audio settings" }
        if let video {
            if (video.maxWidth == nil) != (video.maxHeight == nil) { return "maxWidth and maxHeight go together" }
            if let width = video.maxWidth, let height = video.maxHeight, width < 2 || height < 2 || width > 16384 || height > 16384 {
                return "the box must be between 2x2 and 16384x16384"
            }
            if video.bitrate != nil && video.crf != nil { return "use either bitrate or crf, not both" }
            if let bitrate = video.bitrate, bitrate < 10_000 { return "video bitrate is in bits per second (at least 10000)" }
            if let crf = video.crf, !(0...51).contains(crf) { return "crf is between 0 and 51" }
            if let speed = video.encoderPreset, !Preset.encoderSpeeds.contains(speed) {
                return "encoderPreset is one of \(Preset.encoderSpeeds.joined(separator: ", "))"
            }
            if video.codec == .copy && (video.box != nil || video.bitrate != nil || video.crf != nil) {
                return "copied video cannot be scaled or re-encoded"
            }
        }
        if let audio {
            if let channels = audio.channels, !(1...8).contains(channels) { return "audio channels are between 1 and 8" }
            if let rate = audio.sampleRate, !Preset.aacSampleRates.contains(rate) {
                return "sampleRate is one of \(Preset.aacSampleRates.map(String.init).joined(separator: ", "))"
            }
            if let bitrate = audio.bitrate, !(8_000...512_000).contains(bitrate) { return "audio bitrate is between 8000 and 512000" }
            if audio.codec == .copy && (audio.channels != nil || audio.sampleRate != nil || audio.bitrate != nil) {
                return "copied audio cannot be resampled or re-encoded"
            }
        }
        if !format.holdsVideo && video != nil { return "format m4a holds audio only; remove the video settings" }
        return nil
    }

    static let encoderSpeeds = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]
    static let aacSampleRates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
}
