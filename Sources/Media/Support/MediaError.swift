import JobctlCore

/// An error of the export pipeline, with a code from the user-facing contract (docs/spec.md §4).
///
/// `description` is the one line a person can act on (`input_not_found: /data/in.mov does not
/// exist`); the FFmpeg error underneath, if any, is kept for `debugDescription` and logs.
public struct MediaError: CodedError, Sendable {
    /// A code of the one vocabulary (`input_not_found`…, `cancelled`): what the job JSON, the
    /// CLI and the API say, and the exit and HTTP statuses that follow from it.
    public var code: ErrorCode
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
        _ code: ErrorCode,
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
