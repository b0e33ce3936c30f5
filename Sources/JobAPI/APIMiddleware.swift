import Foundation
import Hummingbird
import JobctlCore
import Logging
import Media
import NIOCore
import Prometheus
import Queue
import SafeHTTP
import ServiceLifecycle
import Synchronization

/// Every error leaves in the API's one shape: Hummingbird's own (413, 404) keep their status,
/// a method a path does not have is 405 with `Allow`, a database error is 503
/// `database_unavailable`, anything else 500 `internal`, with the details in the log only.
struct ErrorShape: RouterMiddleware {
    let routes: RouteTable
    let logger: Logger

    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as Hummingbird.HTTPError {
            if error.status == .notFound {
                let allowed = routes.methods(for: request.uri.path)
                if !allowed.isEmpty {
                    var refusal = APIError(
                        .methodNotAllowed,
                        "\(request.uri.path) answers \(allowed.joined(separator: ", "))"
                    )
                    refusal.allow = allowed
                    throw refusal
                }
            }
            let code: ErrorCode = error.status == .notFound ? .notFound : .invalidRequest
            throw APIError(error.status, code, error.body ?? error.status.reasonPhrase)
        } catch let error as JobStoreError where error.code != .conflict && error.code != .notFound {
            logger.error("The job database failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw APIError.databaseUnavailable
        } catch {
            logger.error("A request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw APIError(.internalError, "the request failed; the server's log has the details")
        }
    }
}

/// The router's routes, to tell a path that does not exist (404) from a method a path does not
/// have (405). Filled once, when the router is built.
package final class RouteTable: Sendable {
    private let routes = Mutex<[(method: HTTPRequest.Method, segments: [Substring])]>([])

    package init() {}

    package func set(_ routes: [(HTTPRequest.Method, String)]) {
        self.routes.withLock { $0 = routes.map { ($0.0, $0.1.split(separator: "/")) } }
    }

    /// The methods routed for `path` (`{name}` segments match any segment), sorted.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        let methods = routes.withLock { routes in
            routes.filter { route in
                route.segments.count == segments.count
                    && zip(route.segments, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
            }
            .map(\.method.rawValue)
        }
        return Set(methods).sorted()
    }
}

/// `Authorization: Bearer jck_…`, then the key's rate limit: the middleware of the keyed group
/// (`/v1/…`, and `/metrics` unless it is public), whatever the path; the routes that need no
/// key are outside that group (`APIRoutes`). A failure is logged with the key's id when it has
/// one, never with the key; failures that keep coming for one key id or from one client are
/// answered 429 (`AuthFailures`), and a valid key never waits on them.
struct KeyAuthentication: RouterMiddleware {
    let store: any APIKeyStore
    let cache: APIKeyCache?
    let keyLimiter: RateLimiter?
    let failures: AuthFailures
    let logger: Logger

    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        let client = failures.proxies.client(peer: context.remoteAddress?.ipAddress, headers: request.headers)
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            if let wait = failures.failed(keyID: nil, client: client) { throw APIError.rateLimited(wait) }
            throw APIError.unauthorized
        }
        let text = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        let key: APIKey?
        do {
            key = try await APIKeys.verify(Substring(text), in: store, cache: cache)
        } catch {
            logger.error("Checking an API key failed", metadata: ["error": "\(error)"])
            throw APIError.databaseUnavailable
        }
        guard let key else {
            let id = APIKeys.parse(Substring(text))?.id
            if let wait = failures.failed(keyID: id, client: client) { throw APIError.rateLimited(wait) }
            logger.warning(
                "Refused an API key",
                metadata: [
                    "key.id": "\(id ?? "malformed")", "path": "\(request.uri.path)",
                    "address": "\(client ?? "unknown")",
                ]
            )
            throw APIError.unauthorized
        }
        if let wait = keyLimiter?.take(key.id) { throw APIError.rateLimited(wait) }
        var context = context
        context.key = key
        let response = try await next(request, context)
        // A response costs its size too (`HEAD` has produced the whole body and sends its
        // length only: it pays for it too).
        let bytes = max(response.body.contentLength ?? 0, response.headers[.contentLength].flatMap { Int($0) } ?? 0)
        keyLimiter?.charge(key.id, responseBytes: bytes)
        return response
    }
}
