import JobctlCore

/// An error of the export pipeline, with a code from the user-facing contract (docs/spec.md §4).
///
/// `description` is the one line a person can act on (`input_not_found: /data/in.mov does not
/// exist`); the FFmpeg error underneath, if any, is kept for `debugDescription` and logs.
public struct MediaError: CodedError, Sendable {
    /// A stable, documented error code. New codes may be added (it wraps a private enum): match
    /// on the ones you know with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible, Codable {
        private enum Base: String, Sendable, Codable {
            case inputNotFound = "input_not_found"
            case inputUnreadable = "input_unreadable"
            case inputUnsupported = "input_unsupported"
            case rangeOutOfBounds = "range_out_of_bounds"
            case presetUnknown = "preset_unknown"
            case presetIncompatible = "preset_incompatible"
            case outputUnwritable = "output_unwritable"
            case outputForbidden = "output_forbidden"
            case decodeFailed = "decode_failed"
            case encodeFailed = "encode_failed"
            case limitExceeded = "limit_exceeded"
            case invalidRequest = "invalid_request"
            case internalError = "internal"
            case cancelled
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The code as the job JSON and the CLI write it.
        public var rawValue: String { base.rawValue }
        /// The code in the vocabulary every error shares.
        public var errorCode: ErrorCode { ErrorCode(rawValue: base.rawValue) }
        public var description: String { base.rawValue }

        public static let inputNotFound = Code(.inputNotFound)
        public static let inputUnreadable = Code(.inputUnreadable)
        public static let inputUnsupported = Code(.inputUnsupported)
        public static let rangeOutOfBounds = Code(.rangeOutOfBounds)
        public static let presetUnknown = Code(.presetUnknown)
        public static let presetIncompatible = Code(.presetIncompatible)
        public static let outputUnwritable = Code(.outputUnwritable)
        public static let outputForbidden = Code(.outputForbidden)
        public static let decodeFailed = Code(.decodeFailed)
        public static let encodeFailed = Code(.encodeFailed)
        /// A resource limit (`ResourceLimits`): picture size, duration, tracks, output size.
        public static let limitExceeded = Code(.limitExceeded)
        /// A job kind's option outside its domain (`MediaError.option` names it).
        public static let invalidRequest = Code(.invalidRequest)
        public static let internalError = Code(.internalError)
        /// Not an error code of docs/spec.md §4: the export was cancelled (status `cancelled`).
        public static let cancelled = Code(.cancelled)
    }

    public var code: Code
    public var message: String
    /// What FFmpeg (or the system) said underneath, for logs.
    public var cause: (any Error)?
    public var location: ErrorLocation
    /// A failure of the network or a server, not of the input itself: another attempt later
    /// may succeed (a job retries it even though the code is an input error).
    public var transient = false
    /// For `invalid_request`: the option at fault, so each front end names it in its own words
    /// (`waveform.samplesPerPixel` in the API, `--samples-per-pixel` on the command line).
    public var option: InvalidOption?

    /// A kind's option and what it must be (`samplesPerPixel`, "is between 2 and 16777216").
    /// `field` is the name the API's body and, in kebab case, the command line's flag use.
    public struct InvalidOption: Sendable, Hashable {
        public var field: String
        public var requirement: String

        /// `--samples-per-pixel`: the command line's flag for `field`.
        public var flag: String { Self.flag(for: field) }

        /// The command line's flag for a field named in camel case (`samplesPerPixel`).
        public static func flag(for field: String) -> String {
            "--"
                + field.reduce(into: "") { text, character in
                    if character.isUppercase { text += "-" + character.lowercased() } else { text.append(character) }
                }
        }
    }

    /// `invalid_request`: `field` is not what it must be (`requirement`).
    public static func invalidOption(
        _ field: String,
        _ requirement: String,
        file: String = #fileID,
        line: Int = #line
    ) -> MediaError {
        var error = MediaError(.invalidRequest, "\(field) \(requirement)", file: file, line: line)
        error.option = InvalidOption(field: field, requirement: requirement)
        return error
    }

    /// - Parameter detail: what FFmpeg or the system said, kept as the `cause`.
    public init(
        _ code: Code,
        _ message: String,
        detail: String? = nil,
        cause: (any Error)? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause ?? detail.map(ErrorDetail.init)
        self.location = ErrorLocation(file: file, line: line)
    }

    /// The cause as text, for logs.
    public var detail: String? { cause.map { "\($0)" } }

    public var isCancellation: Bool { code == .cancelled }

    public static func cancelled(file: String = #fileID, line: Int = #line) -> MediaError {
        MediaError(.cancelled, "cancelled before it finished (nothing was written)", file: file, line: line)
    }
}
