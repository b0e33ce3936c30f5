import Foundation

/// The presets a command can use: the built-in table, then those of a custom presets file
/// (`--presets FILE`, env `JOBCTL_PRESETS`).
public struct PresetCatalog: Sendable {
    public private(set) var presets: [Preset]
    /// The ladders of the presets file (`hls --ladder NAME`); the built-in ones are tables
    /// (`Ladder.table`), not entries.
    public private(set) var ladders: [NamedLadder] = []

    public static let builtIn = PresetCatalog(presets: Preset.builtIn)

    private init(presets: [Preset]) { self.presets = presets }

    /// The built-in presets plus those of the JSON file at `path` (a list of objects with the
    /// fields of `presets --json`; `ffmpeg` and `ffmpegHDR` are ignored).
    public init(customFile path: String?) throws(PresetFileError) {
        self = .builtIn
        guard let path else { return }
        let data = try PresetCatalog.contents(of: path)
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String
            throw PresetFileError(path: path, reason: "is not valid JSON\(detail.map { " (\($0))" } ?? "")")
        }
        // Ladders (entries with a `ladder` key) first; the rest are presets.
        var (presetJSON, presetData) = (json, data)
        if let list = json as? [Any] {
            let (ladders, problem) = NamedLadder.entries(in: list)
            if let problem { throw PresetFileError(path: path, reason: problem) }
            self.ladders = ladders
            if !ladders.isEmpty {
                let rest = list.filter { ($0 as? [String: Any])?["ladder"] == nil }
                presetJSON = rest
                presetData = (try? JSONSerialization.data(withJSONObject: rest)) ?? Data("[]".utf8)
            }
        }
        // Each key's type, with the preset, the key and the value named, before the decoder
        // (whose messages say "not valid JSON" for 20.5 where a whole number belongs).
        if let problem = PresetShape.problem(in: presetJSON) { throw PresetFileError(path: path, reason: problem) }
        let custom: [Preset]
        do {
            custom = try JSONDecoder().decode([Preset].self, from: presetData)
        } catch let DecodingError.keyNotFound(key, context) {
            throw PresetFileError(
                path: path,
                reason: "a preset lacks '\(key.stringValue)' (at \(PresetCatalog.where(context)))"
            )
        } catch let DecodingError.dataCorrupted(context) {
            throw PresetFileError(
                path: path,
                reason: "\(context.debugDescription) (at \(PresetCatalog.where(context)))"
            )
        } catch let DecodingError.typeMismatch(_, context) where context.codingPath.isEmpty {
            throw PresetFileError(path: path, reason: "is not a JSON list of presets ([{\"name\": …}, …])")
        } catch let DecodingError.typeMismatch(_, context) {
            throw PresetFileError(
                path: path,
                reason: "\(context.debugDescription) (at \(PresetCatalog.where(context)))"
            )
        } catch {
            throw PresetFileError(path: path, reason: "is not a JSON list of presets (\(error))")
        }
        for preset in custom {
            if let problem = preset.validationProblem {
                throw PresetFileError(path: path, reason: "preset '\(preset.name)': \(problem)")
            }
            guard !presets.contains(where: { $0.name == preset.name }) else {
                throw PresetFileError(
                    path: path,
                    reason: "preset '\(preset.name)' is defined twice or shadows a built-in preset"
                )
            }
            presets.append(preset)
        }
    }

    /// The file's bytes, or why it cannot be a presets file.
    private static func contents(of path: String) throws(PresetFileError) -> Data {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = errno == ENOENT ? "does not exist" : "cannot be read (\(String(cString: strerror(errno))))"
            throw PresetFileError(path: path, reason: reason)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw PresetFileError(
                path: path,
                reason: info.st_mode & S_IFMT == S_IFDIR ? "is a directory, not a JSON file" : "is not a regular file"
            )
        }
        guard info.st_size <= 1 << 20 else {
            throw PresetFileError(path: path, reason: "is \(info.st_size) bytes; a presets file is at most 1 MB")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PresetFileError(path: path, reason: "cannot be read (\(String(cString: strerror(errno))))")
        }
        return data
    }

    private static func `where`(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "top level" : path
    }

    /// The presets file's ladder called `name`.
    public func ladder(named name: String) -> NamedLadder? { ladders.first { $0.name == name } }

    /// A preset given inline (an HTTP request's `"preset": {…}`): the fields of `presets
    /// --json`, checked as a presets file's are. `name` and `summary` may be left out
    /// (`inline`); a name this catalog already has is refused, so that a job's preset name
    /// always means one thing. Errors are `preset_unknown` naming the field.
    public func inlinePreset(_ json: Data) throws(MediaError) -> Preset {
        guard var object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw MediaError(
                .presetUnknown,
                "an inline preset is a JSON object with the fields of `jobctl presets --json`"
            )
        }
        if object["name"] == nil || object["name"] is NSNull { object["name"] = "inline" }
        if object["summary"] == nil || object["summary"] is NSNull { object["summary"] = "an inline preset" }
        if let problem = PresetShape.problem(in: [object]) {
            throw MediaError(
                .presetUnknown,
                "inline \(problem.replacingOccurrences(of: "preset 1: ", with: "preset: "))"
            )
        }
        let preset: Preset
        do {
            preset = try JSONDecoder().decode(Preset.self, from: JSONSerialization.data(withJSONObject: object))
        } catch {
            throw MediaError(.presetUnknown, "inline preset: \(error)")
        }
        if let problem = preset.validationProblem {
            throw MediaError(.presetUnknown, "inline preset '\(preset.name)': \(problem)")
        }
        guard !presets.contains(where: { $0.name == preset.name }) else {
            throw MediaError(
                .presetUnknown,
                "inline preset '\(preset.name)' has the name of a known preset: give it another name, or send the name alone"
            )
        }
        return preset
    }

    /// The preset called `name`, or `preset_unknown` listing the names there are.
    public func preset(named name: String) throws(MediaError) -> Preset {
        if let preset = presets.first(where: { $0.name == name }) { return preset }
        throw MediaError(
            .presetUnknown,
            "no preset named '\(name)' (known: \(presets.map(\.name).joined(separator: ", ")))"
        )
    }
}

/// The shape a presets file must have: a list of objects whose keys are known and whose
/// values have the right type. Ranges are checked later (`Preset.validationProblem`).
enum PresetShape {
    indirect enum Kind {
        case string, wholeNumber
        case oneOf([String])
        /// Keys and their kinds; the required ones.
        case object([String: Kind], required: [String])
    }

    static let video: Kind = .object(
        [
            "codec": .oneOf(VideoCodec.allCases.map(\.rawValue)), "maxWidth": .wholeNumber, "maxHeight": .wholeNumber,
            "bitrate": .wholeNumber,
            "crf": .wholeNumber, "encoderPreset": .string, "hdr": .oneOf(HDRMode.allCases.map(\.rawValue)),
        ],
        required: ["codec"]
    )
    static let audio: Kind = .object(
        [
            "codec": .oneOf(AudioCodec.allCases.map(\.rawValue)), "channels": .wholeNumber, "sampleRate": .wholeNumber,
            "bitrate": .wholeNumber,
        ],
        required: ["codec"]
    )
    /// `ffmpeg` and `ffmpegHDR` are what `presets --json` prints; they are ignored, so that
    /// output can be edited.
    static let preset: Kind = .object(
        [
            "name": .string, "summary": .string, "format": .oneOf(ContainerFormat.allCases.map(\.rawValue)),
            "video": video, "audio": audio,
            "ffmpeg": .string, "ffmpegHDR": .string,
        ],
        required: ["name", "summary", "format"]
    )

    static func problem(in json: Any) -> String? {
        guard let list = json as? [Any] else { return "is not a JSON list of presets ([{\"name\": …}, …])" }
        for (index, element) in list.enumerated() {
            guard let object = element as? [String: Any] else { return "entry \(index + 1) is not an object" }
            let label = (object["name"] as? String).map { "preset '\($0)'" } ?? "preset \(index + 1)"
            if let problem = problem(in: object, kind: preset, name: "") { return "\(label): \(problem)" }
        }
        return nil
    }

    /// The first problem of `value` as a `kind` called `name` ("" for a preset itself).
    private static func problem(in value: Any, kind: Kind, name: String) -> String? {
        if value is NSNull { return nil }
        switch kind {
        case .string:
            guard value is String else { return "\(name) must be a string, not \(show(value))" }
        case .wholeNumber:
            guard isWholeNumber(value) else { return "\(name) must be a whole number, not \(show(value))" }
        case .oneOf(let choices):
            guard let text = value as? String, choices.contains(text) else {
                return "\(name) is one of \(choices.joined(separator: ", ")), not \(show(value))"
            }
        case .object(let keys, let required):
            guard let object = value as? [String: Any] else { return "\(name) must be an object, not \(show(value))" }
            let prefix = name.isEmpty ? "" : name + "."
            if let missing = required.first(where: { object[$0] == nil || object[$0] is NSNull }) {
                return "\(prefix + missing) is missing"
            }
            for key in object.keys.sorted() {
                guard let inner = keys[key] else {
                    return
                        "unknown key '\(prefix + key)' (known: \(keys.keys.sorted().map { prefix + $0 }.joined(separator: ", ")))"
                }
                if let problem = problem(in: object[key]!, kind: inner, name: prefix + key) { return problem }
            }
        }
        return nil
    }

    /// An integer that fits in an `Int` exactly (not 20.5, not 99999999999999999999, not `true`).
    private static func isWholeNumber(_ value: Any) -> Bool {
        guard let number = value as? NSNumber, String(describing: type(of: value)) != "__NSCFBoolean",
            !(value is NSDecimalNumber)
        else { return false }
        let double = number.doubleValue
        return double.isFinite && double == double.rounded() && abs(double) < 9_007_199_254_740_992
    }

    private static func show(_ value: Any) -> String {
        switch value {
        case let text as String: "\"\(text)\""
        case let number as NSNumber where String(describing: type(of: value)) == "__NSCFBoolean":
            number.boolValue ? "true" : "false"
        case let number as NSDecimalNumber: number.stringValue
        case let number as NSNumber: number.stringValue
        case is [Any]: "a list"
        case is [String: Any]: "an object"
        default: "\(value)"
        }
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
        guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
        else {
            return "names use letters, digits, '-', '_' and '.'"
        }
        guard video != nil || audio != nil else { return "it has neither video nor audio settings" }
        if let video {
            if (video.maxWidth == nil) != (video.maxHeight == nil) { return "maxWidth and maxHeight go together" }
            if let width = video.maxWidth, let height = video.maxHeight,
                width < 2 || height < 2 || width > 16384 || height > 16384
            {
                return "the box (maxWidth x maxHeight) must be between 2x2 and 16384x16384, not \(width)x\(height)"
            }
            if video.bitrate != nil && video.crf != nil { return "use either bitrate or crf, not both" }
            if let bitrate = video.bitrate, bitrate < 10_000 || bitrate > 1_000_000_000 {
                return "video.bitrate is in bits per second, 10000 to 1000000000, not \(bitrate)"
            }
            if let crf = video.crf, !(0...51).contains(crf) { return "video.crf is between 0 and 51, not \(crf)" }
            if let speed = video.encoderPreset, !Preset.encoderSpeeds.contains(speed) {
                return "video.encoderPreset is one of \(Preset.encoderSpeeds.joined(separator: ", ")), not '\(speed)'"
            }
            if video.codec == .copy && (video.box != nil || video.bitrate != nil || video.crf != nil) {
                return "copied video cannot be scaled or re-encoded"
            }
            if video.hdr == .keep && video.codec == .h264 {
                return "video.hdr 'keep' needs codec hevc (H.264 presets encode 8-bit SDR)"
            }
        }
        if let audio {
            if let channels = audio.channels, !(1...8).contains(channels) {
                return "audio.channels is between 1 and 8, not \(channels)"
            }
            if let rate = audio.sampleRate, !Preset.aacSampleRates.contains(rate) {
                return
                    "audio.sampleRate is one of \(Preset.aacSampleRates.map(String.init).joined(separator: ", ")), not \(rate)"
            }
            if let bitrate = audio.bitrate, !(8_000...512_000).contains(bitrate) {
                return "audio.bitrate is between 8000 and 512000, not \(bitrate)"
            }
            if audio.codec == .copy && (audio.channels != nil || audio.sampleRate != nil || audio.bitrate != nil) {
                return "copied audio cannot be resampled or re-encoded"
            }
        }
        if !format.holdsVideo && video != nil { return "format m4a holds audio only; remove the video settings" }
        return nil
    }

    /// x264/x265 speeds that cost several times `medium`'s CPU (`placebo` about 10x): an
    /// operator's choice, not every API key's (`jobctl serve` refuses them inline from other keys).
    public static let costlyEncoderSpeeds: Set<String> = ["slower", "veryslow", "placebo"]

    static let encoderSpeeds = [
        "ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo",
    ]
    static let aacSampleRates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
}
