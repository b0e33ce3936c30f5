import Foundation
import JobctlCore
import Media
import Queue

extension JobKind {
    public static let waveform: JobKind = "waveform"
}

/// `waveform`: audio peaks as audiowaveform writes them (`peaks.json`, `peaks.dat`) and a PNG
/// picture, for players that draw a waveform (peaks.js, wavesurfer.js).
public enum WaveformKind: FileSetKind {
    /// `"waveform": {…}`, the flags of `jobctl waveform`.
    public struct Request: Codable, Sendable, Hashable {
        public var samplesPerPixel: WholeNumber?
        public var pixelsPerSecond: WholeNumber?
        public var bits: WholeNumber?
        public var splitChannels: Bool?
        public var track: WholeNumber?
        /// `["json", "png"]` or `"json,png"`; default json.
        public var files: ListValue?
        public var width: WholeNumber?
        public var height: WholeNumber?
        public var color: String?
        public var background: String?

        public init() {}
    }

    public static let kind = JobKind.waveform

    public static func options(
        from request: Request?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> WaveformOptions {
        let request = request ?? Request()
        guard format == nil else {
            throw rules.invalid(
                "format",
                "is not for a waveform: choose its files with \(rules.name("waveform.files"))"
            )
        }
        var options = WaveformOptions()
        options.samplesPerPixel = request.samplesPerPixel?.value
        options.pixelsPerSecond = request.pixelsPerSecond?.value
        options.bits = request.bits?.value ?? 16
        options.splitChannels = request.splitChannels ?? false
        options.track = request.track?.value
        let files = (request.files?.text ?? "json").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces).lowercased()
        }
        for name in files where !["json", "dat", "png"].contains(name) {
            throw rules.invalid("waveform.files", "lists json, dat and png, not '\(name.prefix(20))'")
        }
        options.json = files.contains("json")
        options.dat = files.contains("dat")
        var picture = WaveformPicture()
        if let width = request.width { picture.width = width.value }
        if let height = request.height { picture.height = height.value }
        if let color = request.color { picture.color = hex(color) }
        if let background = request.background { picture.background = hex(background) }
        if files.contains("png") {
            options.png = picture
        } else if request.width != nil || request.height != nil || request.color != nil || request.background != nil {
            let drawn = ["width", "height", "color", "background"].map { rules.name("waveform.\($0)") }
            throw rules.invalid(
                "waveform.files",
                "has no png, which \(drawn.joined(separator: ", ")) are for: add png to \(rules.name("waveform.files"))"
            )
        }
        try rules.checking(field) { () throws(MediaError) in try options.check() }
        return options
    }

    /// A colour as the picture holds it, `RRGGBB`: a request may write `#RRGGBB` (CSS's way).
    /// The only place that knows about the `#`; `WaveformOptions.check` then wants six hex digits.
    private static func hex(_ colour: String) -> String {
        colour.hasPrefix("#") ? String(colour.dropFirst()) : colour
    }

    public static func work(on asset: Asset, options: WaveformOptions, range: TimeRange) throws(MediaError) -> Work {
        Work(reader: try WaveformReader(asset: asset, options: options, timeRange: range))
    }

    /// The result's `waveform`.
    struct Result: Encodable {
        var sampleRate: Int
        var samplesPerPixel: Int
        var channels: Int
        var bits: Int
        var length: Int
        var duration: Double
    }

    public struct Work: FileSetWork {
        /// The reader itself, for `jobctl waveform`, which writes each file to a path of its own.
        public let reader: WaveformReader
        public var progress: Double { reader.progress }
        public func cancel() { reader.cancel() }
        public static let isSetFile: @Sendable (String) -> Bool = {
            [WaveformOutputs.jsonName, WaveformOutputs.datName, WaveformOutputs.pngName].contains($0)
        }

        public func run(into files: StagedFiles) throws -> JSONValue {
            let result = try reader.run(into: files)
            return try .result(
                [
                    "waveform": Result(
                        sampleRate: result.sampleRate,
                        samplesPerPixel: result.samplesPerPixel,
                        channels: result.channels,
                        bits: reader.options.bits,
                        length: result.length,
                        duration: result.duration
                    )
                ]
            )
        }
    }
}
