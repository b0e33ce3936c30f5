import JobctlCore

/// Why an object store request failed, in the one error shape. The message names the location
/// and the store's own error code (`NoSuchKey`, `SignatureDoesNotMatch`); it never holds a
/// secret, a token or a signed URL.
public struct S3Error: CodedError, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case configuration
            case credentials
            case notFound = "not_found"
            case denied
            case preconditionFailed = "precondition_failed"
            case transient
            case failed
            case stopped
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The endpoint, region or profile is unusable (a bad AWS_ENDPOINT_URL, an unreadable file).
        public static let configuration = Code(.configuration)
        /// No credentials anywhere in the chain, or a source that failed.
        public static let credentials = Code(.credentials)
        /// NoSuchKey, NoSuchBucket, NoSuchUpload (404).
        public static let notFound = Code(.notFound)
        /// AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId and other 4xx: trying again
        /// will get the same answer.
        public static let denied = Code(.denied)
        /// A conditional write lost (412): the object is not what this writer expected.
        public static let preconditionFailed = Code(.preconditionFailed)
        /// 5xx, SlowDown, RequestTimeout, a network failure: worth another try.
        public static let transient = Code(.transient)
        /// Anything else that is not worth another try (a malformed answer).
        public static let failed = Code(.failed)
        /// The caller said stop (a cancelled job, a lost lease).
        public static let stopped = Code(.stopped)
    }

    public var code: Code
    public var message: String
    /// The store's error code (`NoSuchKey`), when it sent one.
    public var storeCode: String?
    public var cause: (any Error)?
    public var location: ErrorLocation
    /// The store stopped answering (no bytes moved for the client's stall limit, or no answer
    /// within its timeout): worth one more try, not many (a wedged store ties a worker up for
    /// each of them).
    public var stalled = false

    public init(
        _ code: Code,
        _ message: String,
        storeCode: String? = nil,
        cause: (any Error)? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.storeCode = storeCode
        self.cause = cause
        self.location = ErrorLocation(file: file, line: line)
    }

    /// Worth another try later.
    public var isTransient: Bool { code == .transient }
}
