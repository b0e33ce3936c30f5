import Foundation
import JobctlCore
import Media
import Queue

/// `export`: an `AVAssetExportSession` on a server. An input, a preset (by name, or inline with
/// the fields of `jobctl presets --json`), a range and one output file. The row stores the
/// preset's name and its settings as they were at submission, so every worker runs the same
/// preset whatever presets file it has; `format` (mp4, mov, m4a) has a column of its own.
public enum ExportKind: SplittableKind {
    /// `"preset": "low"`, or `"preset": {…}`.
    public enum Request: Codable, Sendable, Hashable {
        case name(String)
        case inline(JSONValue)

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let name = try? container.decode(String.self) {
                self = .name(name)
                return
            }
            let value = try container.decode(JSONValue.self)
            guard case .object = value else {
                throw DecodingError.typeMismatch(
                    JSONValue.self,
                    .init(codingPath: decoder.codingPath, debugDescription: "a preset name or object")
                )
            }
            self = .inline(value)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .name(let name): try container.encode(name)
            case .inline(let value): try container.encode(value)
            }
        }
    }

    public static let kind = JobKind.export
    public static let field = "preset"
    public static let writesFileSet = false

    public static func options(
        from request: Request?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> Preset {
        if let format, ContainerFormat(rawValue: format) == nil {
            throw rules.invalid("format", "for an export is mp4, mov or m4a, not '\(format.prefix(20))'")
        }
        guard let request else { throw rules.invalid("preset", "is required for an export (see `jobctl presets`)") }
        let preset: Preset
        do throws(MediaError) {
            switch request {
            case .name(let name): preset = try rules.catalog.preset(named: name)
            case .inline(let value):
                preset = try rules.catalog.inlinePreset((try? JSONEncoder().encode(value)) ?? Data())
            }
        } catch {
            throw SubmissionError(code: error.code, field: "preset", message: error.message)
        }
        // Encoder settings that cost many times the CPU are the operator's to grant (an admin
        // key, a named preset in the presets file).
        if !rules.mayAskCostlySettings, case .inline = request, let speed = preset.video?.encoderPreset,
            Preset.costlyEncoderSpeeds.contains(speed)
        {
            throw SubmissionError(
                code: .forbidden,
                field: "preset",
                message:
                    "encoderPreset '\(speed)' costs many times the CPU of 'medium': only admin keys may ask for it inline (an operator can offer it as a named preset)"
            )
        }
        return preset
    }

    public static func plan(
        _ preset: Preset,
        format: String?,
        input: LocalInput,
        output: String?
    ) throws(MediaError) -> SubmissionPlan {
        let container = format.flatMap(ContainerFormat.init(rawValue:))
        let path = output.map { $0.split(separator: "?", maxSplits: 1).first.map(String.init) ?? $0 }
        let chosen =
            container ?? path.flatMap { ContainerFormat(pathExtension: ($0 as NSString).pathExtension) }
            ?? preset.format
        try input.check(refusing: [.presetIncompatible, .inputUnsupported]) { asset, _ throws(MediaError) in
            if let error = preset.incompatibility(with: asset, format: chosen) { throw error }
        }
        return SubmissionPlan(
            preset: preset.name,
            settings: try stored(preset),
            format: container?.rawValue,
            defaultOutput: Submission.besideInput(
                input.location,
                suffix: "\(preset.name).\((container ?? preset.format).fileExtension)"
            )
        )
    }

    public static func prepare(
        _ job: Job,
        options preset: Preset,
        context: RunContext
    ) async throws
        -> any PreparedJob
    {
        try await ExportJob.prepare(job, preset: preset, context: context)
    }
}

/// A split export (`SplitJob`): the audio and one child per video segment, joined by the parent.
extension ExportKind {
    typealias Part = SplitJob.Segment

    static func check(
        _ split: SplitRequest,
        for request: JobRequest,
        rules: SubmissionRules
    ) throws(SubmissionError) {
        let preset: Preset
        do {
            preset = try request.presetSettings.decoded(as: Preset.self)
        } catch {
            throw rules.invalid("split", "cannot go with this preset")
        }
        let format = request.format.flatMap(ContainerFormat.init(rawValue:)) ?? preset.format
        if let reason = SplitExport.unsplittable(preset, format: format) {
            throw rules.invalid("split", "needs a preset that encodes video and audio: \(reason)")
        }
    }

    static func fanOut(
        _ job: Job,
        options: Preset,
        split: SplitRequest,
        context: RunContext
    ) async throws
        -> FanOutJob?
    {
        try await SplitJob.fanOut(job, preset: options, split: split, context: context)
    }

    static func preparePart(
        _ job: Job,
        options: Preset,
        part: Part,
        context: RunContext
    ) async throws
        -> any PreparedJob
    {
        try await ExportJob.prepareSegment(job, preset: options, segment: part, context: context)
    }

    static func prepareJoin(_ job: Job, options: Preset, context: RunContext) async throws -> any PreparedJob {
        try await SplitJoinJob.prepare(job, preset: options, context: context)
    }
}
