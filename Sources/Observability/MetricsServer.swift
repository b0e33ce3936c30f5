import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle

/// `/healthz` and `/metrics`, written once: a worker's `--metrics-port` server (`MetricsServer`)
/// and `jobctl serve` (JobAPI) add these routes to their Hummingbird routers. `/healthz` is 200
/// when healthy and 503 otherwise with the server's JSON body (docs/operations.md, docs/api.md);
/// `/metrics` is Prometheus' text format.
public struct HealthAndMetrics: Sendable {
    /// What `/healthz` says: whether healthy, and the JSON object to answer (its `status`
    /// included).
    public typealias Check = @Sendable () async -> (healthy: Bool, body: [String: String])

    public let registry: PrometheusCollectorRegistry?
    public let check: Check

    public init(registry: PrometheusCollectorRegistry?, check: @escaping Check) {
        self.registry = registry
        self.check = check
    }

    /// A route's handler, as a router registers it.
    public typealias Handler<Context: RequestContext> = @Sendable (Request, Context) async throws -> Response

    /// Adds `GET /healthz` (and the other `healthPaths`) and, with a registry, `GET /metrics`,
    /// which `authorize` may refuse (the API's admin scope). `register` adds a GET route (and
    /// its HEAD); by default GET, and HEAD with the same head and no body.
    public func add<Context: RequestContext>(
        to router: Router<Context>,
        healthPaths: [RouterPath] = ["/healthz"],
        authorize: @escaping @Sendable (Context) throws -> Void = { _ in },
        beforeMetrics: @escaping @Sendable () -> Void = {},
        register: ((RouterPath, @escaping Handler<Context>) -> Void)? = nil
    ) {
        let register =
            register ?? { path, handler in
                router.get(path, use: handler)
                router.head(path) { request, context in
                    // The GET's head, Content-Length included, without its body.
                    var response = try await handler(request, context)
                    let length = response.body.contentLength
                    response.body = ResponseBody()
                    if let length { response.headers[.contentLength] = "\(length)" }
                    return response
                }
            }
        for path in healthPaths {
            register(path) { _, _ in await self.health() }
        }
        guard let registry else { return }
        register("/metrics") { _, context -> Response in
            try authorize(context)
            beforeMetrics()
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: registry.emitToString()))
            )
        }
    }

    /// The `/healthz` answer.
    public func health() async -> Response {
        let (healthy, body) = await check()
        let json =
            (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])).map {
                String(decoding: $0, as: UTF8.self)
            } ?? "{}"
        return Response(
            status: healthy ? .ok : .serviceUnavailable,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: json + "\n"))
        )
    }
}

/// The HTTP endpoint of a worker process (`--metrics-port`): `HealthAndMetrics` on a Hummingbird
/// server of its own, and nothing else: every other path is 404, every method but GET and HEAD
/// 405.
public final class MetricsServer: Service {
    /// What `/healthz` reports: healthy or not, and details for a person.
    public typealias HealthCheck = @Sendable () async -> (healthy: Bool, details: [String: String])

    private let application: Application<RouterResponder<BasicRequestContext>>

    public init(
        host: String,
        port: Int,
        registry: PrometheusCollectorRegistry,
        logger: Logger,
        health: @escaping HealthCheck
    ) {
        let endpoints = HealthAndMetrics(registry: registry) {
            let (healthy, details) = await health()
            var body = details
            body["status"] = healthy ? "ok" : "unhealthy"
            return (healthy, body)
        }
        let router = Router()
        router.add(middleware: OnlyTheseRoutes())
        endpoints.add(to: router, healthPaths: ["/healthz", "/health"])
        application = Application(
            router: router,
            configuration: .init(address: .hostname(host, port: port), serverName: "jobctl-worker"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                logger.info(
                    "Metrics on http://\(host):\(bound)/metrics, health on /healthz",
                    metadata: ["metrics.port": "\(bound)"]
                )
            },
            logger: logger
        )
    }

    /// Stops accepting when the service group shuts down (it is the first service, so the last
    /// to stop: it answers while the worker drains).
    public func run() async throws {
        try await application.run()
    }
}

/// 405 for a method other than GET or HEAD, and a 404 that says where to look.
private struct OnlyTheseRoutes: RouterMiddleware {
    func handle(
        _ request: Request,
        context: BasicRequestContext,
        next: (Request, BasicRequestContext) async throws -> Response
    ) async throws -> Response {
        guard request.method == .get || request.method == .head else {
            return Self.text(.methodNotAllowed, "only GET\n")
        }
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return Self.text(.notFound, "not found: try /metrics or /healthz\n")
        }
    }

    static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/plain; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body))
        )
    }
}
