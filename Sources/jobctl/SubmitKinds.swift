import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media
import Queue

/// `submit --kind`: each kind's flags are the request the API takes in that kind's field
/// (`--at 1s --size 320x` is `"thumbnails": {"at": "1s", "size": "320x"}`: the `request` of
/// the kind's flags group, the one its in-process command runs), checked by the kind itself
/// (`Submission.request`). A kind without flags here takes `--options JSON`.
extension SubmitCommand {
    /// The request each kind's flags make, by the kind's field; `nil` where none was given.
    private var flagRequests: [(kind: JobKind, field: String, request: JSONValue?)] {
        get throws {
            var waveformRequest = waveform.request
            waveformRequest.files = files.map(ListValue.init)
            return [
                (.export, ExportKind.field, try preset.map { try JSONValue(encoding: ExportKind.Request.name($0)) }),
                (.thumbnails, ThumbnailsKind.field, try Self.given(thumbnails.request)),
                (.storyboard, StoryboardKind.field, try Self.given(storyboard.request)),
                (.waveform, WaveformKind.field, try Self.given(waveformRequest)),
                (.hls, HLSKind.field, try Self.given(ladder.request)),
            ]
        }
    }

    /// `request` as JSON, or `nil` when no flag of it was given (every field empty).
    private static func given(_ request: some Encodable) throws -> JSONValue? {
        let value = try JSONValue(encoding: request)
        guard case .object(let fields) = value, !fields.isEmpty else { return nil }
        return value
    }

    /// The flags behind a request (`samplesPerPixel` → `--samples-per-pixel`; an export's
    /// request is its `--preset`).
    private static func flags(of request: JSONValue, field: String) -> String {
        guard case .object(let fields) = request else { return FieldNaming.flags.name(field) }
        return fields.keys.sorted().map { FieldNaming.flags.name($0) }.joined(separator: ", ")
    }

    func validateKind() throws {
        for given in try flagRequests where given.kind.rawValue != kind {
            guard let request = given.request else { continue }
            throw ValidationError(
                "\(Self.flags(of: request, field: given.field)) is for --kind \(given.kind), not \(kind)"
            )
        }
        if options != nil, try flagRequests.contains(where: { $0.kind.rawValue == kind && $0.request != nil }) {
            throw ValidationError("--options and the kind's own flags are alternatives: give one")
        }
    }

    /// The kind's field: its flags, or `--options`.
    func kindFields() throws -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        for given in try flagRequests where given.kind.rawValue == kind {
            fields[given.field] = given.request
        }
        // An unknown kind is `Submission.request`'s to refuse, naming --kind.
        if let options, let definition = JobKinds.named(JobKind(rawValue: kind)) {
            guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(options.utf8)) else {
                throw CommandFailure.refused(
                    code: .invalidRequest,
                    "--options is the kind's request as JSON, e.g. '{\"at\": \"1s,50%\"}'"
                )
            }
            fields[definition.field] = value
        }
        return fields
    }
}
