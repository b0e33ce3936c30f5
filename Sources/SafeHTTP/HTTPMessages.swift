import Foundation
import JobctlCore

/// A request to send: a POST of exact body bytes (webhooks), a ranged GET (probing a remote
/// input), a PUT of a file or of a part of one (uploading an output), a GET into a file, or the
/// small requests of an object store's API (HEAD, DELETE, a method with a body in memory).
public struct HTTPRequest: Sendable {
    public enum Method: Sendable {
        case post(Data)
        /// Only the first `limit` bytes of the body are kept (`HTTPSender.responseLimit`).
        case get(range: ClosedRange<Int64>?)
        /// The whole file, or the bytes of `range` (a part of a multipart upload).
        case put(file: String, contentType: String?, range: Range<Int64>? = nil)
        case head
        case delete
        /// A GET whose body (of a 2xx answer) is written to the file `path`, created or
        /// truncated: an object of any size in bounded memory. Like a PUT, it has no overall
        /// time limit, only the stall limit. An error answer's body is kept as for `get`.
        case download(to: String)
        /// Any method with a body held in memory (an object store's XML, an empty PUT).
        case send(method: String, body: Data, contentType: String? = nil)
    }

    public var url: String
    public var method: Method
    public var headers: [(name: String, value: String)]

    public init(url: String, method: Method, headers: [(name: String, value: String)] = []) {
        self.url = url
        self.method = method
        self.headers = headers
    }

    /// A JSON POST (a webhook delivery).
    public init(url: String, body: Data, headers: [(name: String, value: String)]) {
        self.init(url: url, method: .post(body), headers: headers + [("Content-Type", "application/json")])
    }
}

/// Why a request failed, in the one error shape: the message is what the delivery log shows.
public struct HTTPError: CodedError, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case refused
            case aborted = "stopped"
            case certificateRejected = "certificate_rejected"
            case transport
            case status = "http_status"
            case notSent = "not_sent"
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }
        public var description: String { base.rawValue }

        /// The address guard refused the address the host resolved to.
        public static let refused = Code(.refused)
        /// `shouldAbort` said stop (a cancelled job, a lost lease).
        public static let aborted = Code(.aborted)
        /// The server's TLS certificate was not trusted: trying again will not help.
        public static let certificateRejected = Code(.certificateRejected)
        /// No final HTTP response: refused, unreachable, reset, timed out.
        public static let transport = Code(.transport)
        /// A final response that is not 2xx (a redirect included: they are not followed).
        public static let status = Code(.status)
        /// The request never reached the network (its body unreadable, no thread to run it).
        public static let notSent = Code(.notSent)
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?
    public var location: ErrorLocation

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.cause = cause
        self.location = ErrorLocation(file: file, line: line)
    }
}

/// What came back (or why nothing did).
public struct HTTPResponse: Sendable {
    /// `nil` when no HTTP response arrived (refused, unreachable, timed out).
    public var statusCode: Int?
    /// The server's `Retry-After`, if it sent one.
    public var retryAfter: Duration?
    public var latency: Duration
    /// Why the request failed; `nil` when it succeeded.
    public var failure: HTTPError?
    /// The start of the response body (capped), as text and as bytes.
    public var body: String = ""
    public var data = Data()
    /// Bytes sent in the request body (PUT).
    public var uploaded: Int64 = 0
    /// The exchange ran out of time: no answer within the timeout, or too few bytes moving for
    /// the stall limit (the peer stalled).
    public var timedOut = false
    /// The response's headers, names in lowercase (the last of a repeated name; at most 100).
    public var headers: [String: String] = [:]

    public init(statusCode: Int? = nil, retryAfter: Duration? = nil, latency: Duration, failure: HTTPError? = nil) {
        self.statusCode = statusCode
        self.retryAfter = retryAfter
        self.latency = latency
        self.failure = failure
    }

    /// A 2xx answer received whole (a transfer that broke off after a 2xx status line, or whose
    /// download could not be written, did not succeed).
    public var succeeded: Bool { failure == nil && statusCode.map { (200..<300).contains($0) } ?? false }

    /// Whether the request failed with `code`.
    public func failed(with code: HTTPError.Code) -> Bool { failure?.code == code }

    /// A request that never reached the network (its thread could not be started).
    public static func notSent(_ reason: String) -> HTTPResponse {
        HTTPResponse(latency: .zero, failure: HTTPError(.notSent, reason))
    }
}
