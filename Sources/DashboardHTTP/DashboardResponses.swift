import Dashboard
import Foundation
import Hummingbird
import JobAPI
import NIOCore

// What the dashboard's routes answer with: pages, refusals, assets, redirects, and the form
// bodies they read.
extension DashboardRoutes {
    // MARK: Responses

    func asset(_ context: DashboardRequestContext) throws -> Response {
        guard let name = context.parameters.get("name"), let asset = DashboardPages.assets[name] else {
            throw APIError(.notFound, "no such file")
        }
        return Response(
            status: .ok,
            headers: Self.securityHeaders(type: asset.type, cache: "public, max-age=300"),
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: asset.bytes))
        )
    }

    func refusal(_ session: Session, _ message: String, status: HTTPResponse.Status) -> Response {
        refusal(frame: session.frame, message, status: status)
    }

    /// A refusal on a page no one is signed in to (yet).
    func refusal(_ links: DashboardLinks, _ message: String, status: HTTPResponse.Status) -> Response {
        refusal(frame: PageFrame(links: links), message, status: status)
    }

    func refusal(frame: PageFrame, _ message: String, status: HTTPResponse.Status) -> Response {
        let heading =
            switch status {
            case .forbidden: "Not allowed"
            case .notFound: "Not found"
            default: "That did not work"
            }
        return html(
            pages.render(MessageView(frame: frame, heading: heading, message: message), as: "message"),
            status: status
        )
    }

    func html(_ page: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: Self.securityHeaders(type: "text/html; charset=utf-8", cache: "no-store"),
            body: ResponseBody(byteBuffer: ByteBuffer(string: page))
        )
    }

    /// The policy every dashboard response carries: scripts, styles and media from this origin
    /// only, no inline script, no framing, forms that post here only.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; "
        + "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    static func securityHeaders(type: String, cache: String) -> HTTPFields {
        [
            .contentType: type,
            .cacheControl: cache,
            .contentSecurityPolicy: contentSecurityPolicy,
            .xContentTypeOptions: "nosniff",
            .init("X-Frame-Options")!: "DENY",
            .init("Referrer-Policy")!: "same-origin",
        ]
    }

    /// 303 to a path relative to the request's (built from its `DashboardLinks`): right under
    /// any base path a proxy adds.
    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// The fields of an `application/x-www-form-urlencoded` body, the last value of a name.
    static func form(_ request: Request, _ context: DashboardRequestContext) async throws -> [String: String] {
        Dictionary(try await formPairs(request, context), uniquingKeysWith: { _, last in last })
    }

    /// The largest form body (413 past it, whether its length was declared or not).
    static let formLimit = 64 * 1024

    /// Every field of a form body (at most `formLimit`) in order, a name repeated as often as it
    /// was sent (checkboxes).
    static func formPairs(_ request: Request, _ context: DashboardRequestContext) async throws -> [(String, String)] {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: formLimit)
        } catch is NIOTooManyBytesError {
            throw HTTPError(.contentTooLarge, message: "a form is at most \(formLimit / 1024) KiB")
        }
        return String(buffer: body).split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { return nil }
            return (name, parts.count == 2 ? decode(parts[1]) ?? "" : "")
        }
    }

    static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    static func queryEscaped(_ text: String) -> String { DashboardText.urlEscaped(text, alsoKeeping: ":,") }
}
