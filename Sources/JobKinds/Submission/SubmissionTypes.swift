import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP

/// A submission as a front end received it, before any check: `jobctl submit`'s arguments or
/// the body of `POST /v1/jobs`. `Submission.request` checks it into a `JobRequest`.
public struct SubmissionDraft: Sendable {
    /// `nil`: an export.
    public var kind: String?
    public var input: String
    /// `nil`: beside the input (the command line), or refused (an API key's job).
    public var output: String?
    public var format: String?
    public var range: RangeDraft?
    public var priority: Int?
    public var maxAttempts: Int?
    public var metadata: [String: String]
    public var webhook: String?
    public var idempotencyKey: String?
    /// The fields that belong to one kind, by field name (`"preset"`, `"thumbnails"`…), as
    /// JSON: the API's body as sent, the command line's flags as that same JSON.
    public var kindFields: [String: JSONValue]
    /// More outputs of the same input, each run as a child of this job, with one webhook for
    /// all (`--also thumbnails`, the API's `"also"`; issue 27).
    public var also: [AlsoDraft] = []
    /// An export split into segments that encode apart and join into one file: `auto`, `off`
    /// or a segment length (`--split`, the API's `"split"`; issue 27).
    public var split: String?

    /// One more output: a kind, its field (`nil`: the kind's defaults), its output (`nil`: the
    /// job's output with its extension replaced by the kind's name).
    public struct AlsoDraft: Sendable, Hashable {
        public var kind: String
        public var output: String?
        public var format: String?
        public var field: JSONValue?

        public init(kind: String, output: String? = nil, format: String? = nil, field: JSONValue? = nil) {
            self.kind = kind
            self.output = output
            self.format = format
            self.field = field
        }
    }

    /// `"1s+3s"` (the command line's grammar) or seconds.
    public enum RangeDraft: Sendable, Hashable {
        case text(String)
        case seconds(start: Double, duration: Double?)
    }

    public init(
        kind: String? = nil,
        input: String,
        output: String? = nil,
        format: String? = nil,
        range: RangeDraft? = nil,
        priority: Int? = nil,
        maxAttempts: Int? = nil,
        metadata: [String: String] = [:],
        webhook: String? = nil,
        idempotencyKey: String? = nil,
        kindFields: [String: JSONValue] = [:],
        also: [AlsoDraft] = [],
        split: String? = nil
    ) {
        self.kind = kind
        self.input = input
        self.output = output
        self.format = format
        self.range = range
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.metadata = metadata
        self.webhook = webhook
        self.idempotencyKey = idempotencyKey
        self.kindFields = kindFields
        self.also = also
        self.split = split
    }
}

/// Who submits, and what that allows.
public struct SubmissionRules: Sendable {
    /// Where local paths are.
    public enum Place: Sendable {
        /// `jobctl submit`: paths on this host, made absolute against `currentDirectory`; an
        /// input may be a `file://` URL; the output defaults to beside the input.
        case host(currentDirectory: String)
        /// An API key's job: local paths relative to the key's own directory under each root
        /// (`ROOT/KEYID/`), and none at all without the root; the output must be given.
        case tenant(owner: String, roots: PathConfinement)
    }

    public var place: Place
    public var catalog: PresetCatalog
    public var addressPolicy: AddressPolicy
    /// The highest priority this submitter may ask for (`keys create --max-priority`).
    public var maxPriority: Int
    /// Whether inline settings costing many times the CPU (an encoder speed slower than
    /// `medium`) may be asked for: the command line's user and admin keys only.
    public var mayAskCostlySettings: Bool
    /// How refusals name fields.
    public var naming: FieldNaming

    public init(
        place: Place,
        catalog: PresetCatalog,
        addressPolicy: AddressPolicy,
        maxPriority: Int = 1000,
        mayAskCostlySettings: Bool = true,
        naming: FieldNaming
    ) {
        self.place = place
        self.catalog = catalog
        self.addressPolicy = addressPolicy
        self.maxPriority = maxPriority
        self.mayAskCostlySettings = mayAskCostlySettings
        self.naming = naming
    }

    /// `invalid_request` (or `code`) about `field`: "NAME REQUIREMENT", NAME as this front end
    /// calls the field.
    public func invalid(_ field: String, _ requirement: String, code: ErrorCode = .invalidRequest) -> SubmissionError {
        SubmissionError(code: code, field: field, message: "\(naming.name(field)) \(requirement)")
    }

    /// `field` as this front end calls it.
    public func name(_ field: String) -> String { naming.name(field) }
}

/// How a front end names a submission's fields in its messages.
public enum FieldNaming: Sendable {
    /// The API's body: `maxAttempts`, `thumbnails.size`.
    case json
    /// `jobctl submit`'s arguments: `--max-attempts`, `--size`, `INPUT`.
    case flags

    public func name(_ field: String) -> String {
        switch self {
        case .json: return field
        case .flags:
            if field == "input" { return "INPUT" }
            let parts = field.split(separator: ".").map(String.init)
            // A kind's request as a whole, or a part of it deeper than a flag (an item of a
            // list): what `--options` holds, named by its path there.
            if parts.count == 1, JobKinds.all.contains(where: { $0.field == field && $0.field != "preset" }) {
                return "--options"
            }
            if parts.count > 2 || parts.dropFirst().contains(where: { Int($0) != nil }) {
                return "--options' \(parts.dropFirst().joined(separator: "."))"
            }
            return MediaError.InvalidOption.flag(for: parts.last ?? field)
        }
    }
}

/// A submission refused: the code, the field at fault (as the API's body names it) and a
/// message naming it as the front end does. The command line exits 64 with `error: CODE:
/// MESSAGE`; the API answers 422 (403 for `forbidden`) with the same code and field.
public struct SubmissionError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: ErrorCode
    public var field: String
    public var message: String
    /// About the media rather than what was typed (a local input's tracks, what is at the
    /// output's path, a picture too large to make): the command line exits with the code's own
    /// status, not 64.
    public var foundInMedia = false

    public init(code: ErrorCode, field: String, message: String, foundInMedia: Bool = false) {
        self.code = code
        self.field = field
        self.message = message
        self.foundInMedia = foundInMedia
    }

    public var description: String { "\(code): \(message)" }

    /// A kind's field of the wrong shape, naming the part that is wrong (`thumbnails.count`).
    static func decoding(_ error: DecodingError, under field: String, rules: SubmissionRules) -> SubmissionError {
        func path(_ keys: [any CodingKey]) -> String {
            ([field] + keys.map { $0.intValue.map(String.init) ?? $0.stringValue }).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return rules.invalid(path(context.codingPath + [key]), "is required")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return rules.invalid(path(context.codingPath), "has the wrong type")
        case .dataCorrupted(let context):
            return rules.invalid(path(context.codingPath), "is not valid: \(context.debugDescription.prefix(200))")
        @unknown default:
            return rules.invalid(field, "could not be read")
        }
    }
}

/// What a kind's `plan` may check of the input: nothing for a URL or a file this host cannot
/// see (the worker reports those), else the opened asset with the job's range.
public struct LocalInput: Sendable {
    /// The input as the job names it here (a path on this host, or a URL).
    public let location: String
    public let range: TimeRange

    public init(location: String, range: TimeRange) {
        self.location = location
        self.range = range
    }

    /// Opens the input if it is a local file this host can read and runs `check` on it. Only
    /// the errors in `refused` refuse the submission; anything else (an encoder this host
    /// lacks but workers may have) is left for the job to report.
    public func check(
        refusing refused: [ErrorCode] = [.inputUnsupported, .limitExceeded, .presetUnknown],
        _ check: (Asset, TimeRange) throws(MediaError) -> Void
    ) throws(MediaError) {
        guard !MediaLocation.isRemote(location) else { return }
        let path = location.lowercased().hasPrefix("file://") ? (URL(string: location)?.path ?? location) : location
        // The duration and output size are the worker's to judge (its limits may differ); the
        // picture and stream limits still bound what opening it here may cost.
        var limits = ResourceLimits.default
        limits.maxDuration = ResourceLimits.none.maxDuration
        guard FileManager.default.fileExists(atPath: path), let asset = try? Asset(location: location, limits: limits)
        else { return }
        do throws(MediaError) {
            try check(asset, range)
        } catch  where refused.contains(error.code) {
            throw error
        } catch {
            return
        }
    }
}

/// An integer field of a request body. Foundation refuses 2.5 or 2^64 for an `Int` as "not
/// valid JSON", without naming the field; this names it (`invalid_request`).
public struct WholeNumber: Codable, Sendable, Hashable {
    public var value: Int

    public init(_ value: Int) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int.self) {
            self.value = value
            return
        }
        throw DecodingError.dataCorrupted(
            .init(codingPath: decoder.codingPath, debugDescription: "a whole number between -2^63 and 2^63-1")
        )
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// A list given as `"a,b"` or `["a", "b"]` (thumbnail times, waveform files).
public struct ListValue: Codable, Sendable, Hashable {
    public var items: [String]

    public init(_ text: String) { items = [text] }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            items = [text]
        } else {
            items = try container.decode([String].self)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    /// The items joined with commas.
    public var text: String { items.joined(separator: ",") }
}

extension SubmissionRules {
    /// Runs a kind's options check (the worker makes it again) and words its refusal for this
    /// front end: an option out of its domain names `FIELD.OPTION`; another refusal (a picture
    /// too large: `limit_exceeded`) names the kind's field.
    public func checking(_ field: String, _ check: () throws(MediaError) -> Void) throws(SubmissionError) {
        do {
            try check()
        } catch {
            if let option = error.option { throw invalid("\(field).\(option.field)", option.requirement) }
            throw SubmissionError(code: error.code, field: field, message: error.message, foundInMedia: true)
        }
    }

    /// A duration in the command line's grammar (`10s`, `1:02`, `250ms`) in `field`, in µs.
    public func duration(_ text: String?, _ field: String) throws(SubmissionError) -> Int64? {
        guard let text else { return nil }
        do {
            return try TimeRange.parseTime(Substring(text), in: text)
        } catch {
            throw SubmissionError(
                code: .invalidRequest,
                field: field,
                message: "\(name(field)): \(error.reading(.duration).description)"
            )
        }
    }

    /// `WxH`, `Wx` or `xH` in `field`.
    public func pictureSize(_ text: String?, _ field: String) throws(SubmissionError) -> PictureSize? {
        guard let text else { return nil }
        guard let size = PictureSize(maximum: text) else { throw invalid(field, "is WxH, Wx or xH, e.g. 320x") }
        return size
    }

    /// The image format of a kind that writes images: jpg (default), png or webp.
    public func imageFormat(_ format: String?, for kind: JobKind) throws(SubmissionError) -> ImageFormat {
        guard let format else { return .jpeg }
        guard let image = ImageFormat(name: format) else {
            throw invalid("format", "for \(kind) is jpg, png or webp, not '\(format.prefix(20))'")
        }
        return image
    }
}
