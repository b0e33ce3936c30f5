import Foundation
import Hummingbird
import JobctlCore
import Queue

/// The one error body of the API: `{"error": {"code", "message", "field"}}`, with the CLI's
/// error codes where one applies. Nothing else reaches a client: no stack trace, no SQL.
public struct APIError: HTTPResponseError, Sendable {
    public var status: HTTPResponse.Status
    public var code: ErrorCode
    public var message: String
    public var field: String?
    /// Seconds, for 429.
    public var retryAfter: Int?
    /// The methods the path has, for 405.
    public var allow: [String]?

    /// An error answered with its code's status (`ErrorCode.httpStatus`): every error but
    /// those below.
    public init(_ code: ErrorCode, _ message: String, field: String? = nil) {
        self.init(HTTPResponse.Status(code: code.httpStatus), code, message, field: field)
    }

    /// An error answered with a status other than its code's, where docs/api.md's table has
    /// one: `invalid_request` for a body that is not JSON or a bad header (400) or too large
    /// (413), and Hummingbird's own refusals, which keep theirs.
    public init(_ status: HTTPResponse.Status, _ code: ErrorCode, _ message: String, field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
    }

    /// A field refused, with the code that says why: answered as `invalid_request` is (422),
    /// whatever that code's own status: the client is to fix the field, so an output directory
    /// that does not exist is 422 `output_unwritable` here, though a job failing with that code
    /// would be the server's 500.
    static func invalid(_ field: String, _ message: String, code: ErrorCode = .invalidRequest) -> APIError {
        APIError(HTTPResponse.Status(code: ErrorCode.invalidRequest.httpStatus), code, message, field: field)
    }

    static let unauthorized = APIError(
        .unauthorized,
        "send an API key as `Authorization: Bearer jck_…` (jobctl keys create)"
    )

    static func rateLimited(_ seconds: Int) -> APIError {
        var error = APIError(.rateLimited, "too many requests; retry after \(seconds) s")
        error.retryAfter = seconds
        return error
    }

    static func tooManyWatches(_ maximum: Int) -> APIError {
        var error = APIError(
            .tooManyWatches,
            "this key holds \(maximum) long polls and event streams on this server already; close some, or retry later"
        )
        error.retryAfter = 5
        return error
    }

    static let databaseUnavailable = APIError(
        .databaseUnavailable,
        "the job database cannot be reached; try again"
    )

    static func noJob(_ id: String) -> APIError { APIError(.jobNotFound, "no job \(id)") }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try APIResponses.json(
            ErrorBody(error: .init(code: code, message: message, field: field)),
            status: status
        )
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        if let allow { response.headers[.allow] = allow.joined(separator: ", ") }
        return response
    }
}

/// `{"error": {"code", "message", "field"}}`, `field` always present (null when none).
struct ErrorBody: Codable, Sendable {
    struct Detail: Codable, Sendable {
        let code: ErrorCode
        let message: String
        let field: String?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
            try container.encode(field, forKey: .field)
        }
    }
    let error: Detail
}

enum APIResponses {
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: try encode(value))
        )
    }

    /// The API's JSON for `value` (compact, the job JSON's date and key rules).
    static func encode(_ value: some Encodable) throws -> ByteBuffer {
        ByteBuffer(bytes: try Job.makeJSONEncoder(pretty: false).encode(value))
    }
}
