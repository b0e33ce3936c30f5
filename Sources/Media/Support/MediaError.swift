/// An error of the export pipeline, with a code from the user-facing contract (docs/spec.md §4).
///
/// `description` is the one line a person can act on (`input_not_found: /data/in.mov does not
/// exist`); the FFmpeg error underneath, if any, is kept for `debugDescription` and logs.
public struct MediaError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, documented error code. New codes may be added; match on the ones you know.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let inputNotFound = Code(rawValue: "input_not_found")
        public static let inputUnreadable = Code(rawValue: "input_unreadable")
        public static let inputUnsupported = Code(rawValue: "input_unsupported")
        public static let rangeOutOfBounds = Code(rawValue: "range_out_of_bounds")
        public static let presetUnknown = Code(rawValue: "preset_unknown")
        public static let presetIncompatible = Code(rawValue: "preset_incompatible")
        public static let outputUnwritable = Code(rawValue: "output_unwritable")
        public static let outputForbidden = Code(rawValue: "output_forbidden")
        public static let decodeFailed = Code(rawValue: "decode_failed")
        public static let encodeFailed = Code(rawValue: "encode_failed")
        /// A resource limit (`ResourceLimits`): picture size, duration, tracks, output size.
        public static let limitExceeded = Code(rawValue: "limit_exceeded")
        public static let internalError = Code(rawValue: "internal")
        /// Not an error code of docs/spec.md §4: the export was cancelled (status `cancelled`).
        public static let cancelled = Code(rawValue: "cancelled")
    }

    public var code: Code
    public var message: String
    /// What FFmpeg (or the system) said, for logs.
    public var detail: String?
    /// A failure of the network or a server, not of the input itself: another attempt later
    /// may succeed (a job retries it even though the code is an input error).
    public var transient = false

    public init(_ code: Code, _ message: String, detail: String? = nil) {
        self.code = code
        self.message = message
        self.detail = detail
    }

    public var description: String { "\(code): \(message)" }
    public var debugDescription: String {
        detail.map { "\(code): \(message) [\($0)]" } ?? description
    }

    public var isCancellation: Bool { code == .cancelled }

    public static func cancelled() -> MediaError { MediaError(.cancelled, "the export was cancelled") }
}
