import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus
import ServiceLifecycle

/// The HTTP endpoint of a worker process (`--metrics-port`): `GET /metrics` in Prometheus' text
/// format and `GET /healthz` (200 when healthy, 503 otherwise, with a JSON body). Nothing
/// else: every other path is 404, every other method 405.
public final class MetricsServer: Service {
    /// What `/healthz` reports: healthy or not, and details for a person.
    public typealias HealthCheck = @Sendable () async -> (healthy: Bool, details: [String: String])

    private let host: String
    private let port: Int
    private let registry: PrometheusCollectorRegistry
    private let health: HealthCheck
    private let logger: Logger
    private let bound = AsyncStream<Int>.makeStream()

    public init(
        host: String,
        port: Int,
        registry: PrometheusCollectorRegistry,
        logger: Logger,
        health: @escaping HealthCheck
    ) {
        self.host = host
        self.port = port
        self.registry = registry
        self.logger = logger
        self.health = health
    }

    public func run() async throws {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                        wrappingChannelSynchronously: channel
                    )
                }
            }
        let port = server.channel.localAddress?.port ?? port
        logger.info(
            "Metrics on http://\(host):\(port)/metrics, health on /healthz",
            metadata: ["metrics.port": "\(port)"]
        )
        // Stops accepting when the service group shuts down (it is the last service to stop).
        do {
            try await cancelWhenGracefulShutdown {
                try await withThrowingDiscardingTaskGroup { group in
                    try await server.executeThenClose { connections in
                        for try await connection in connections {
                            group.addTask { await self.serve(connection) }
                        }
                    }
                }
            }
        } catch is CancellationError {
            // Shut down.
        }
    }

    /// One connection: requests in order, keep-alive as the client asks.
    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>) async {
        do {
            try await connection.executeThenClose { inbound, outbound in
                var head: HTTPRequestHead?
                for try await part in inbound {
                    switch part {
                    case .head(let request):
                        head = request
                    case .body:
                        break
                    case .end:
                        guard let request = head else { continue }
                        let (status, contentType, body) = await respond(to: request)
                        var headers = HTTPHeaders()
                        headers.add(name: "Content-Type", value: contentType)
                        headers.add(name: "Content-Length", value: "\(body.utf8.count)")
                        headers.add(name: "Cache-Control", value: "no-store")
                        if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
                        try await outbound.write(
                            .head(HTTPResponseHead(version: request.version, status: status, headers: headers))
                        )
                        if request.method != .HEAD {
                            try await outbound.write(.body(.byteBuffer(ByteBuffer(string: body))))
                        }
                        try await outbound.write(.end(nil))
                        if !request.isKeepAlive { return }
                        head = nil
                    }
                }
            }
        } catch {
            logger.debug("Metrics connection ended", metadata: ["error": "\(error)"])
        }
    }

    private func respond(to request: HTTPRequestHead) async -> (HTTPResponseStatus, String, String) {
        guard request.method == .GET || request.method == .HEAD else {
            return (.methodNotAllowed, "text/plain; charset=utf-8", "only GET\n")
        }
        switch request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "" {
        case "/metrics":
            return (.ok, "text/plain; version=0.0.4; charset=utf-8", registry.emitToString())
        case "/healthz", "/health":
            let (healthy, details) = await health()
            var body = details
            body["status"] = healthy ? "ok" : "unhealthy"
            let json =
                (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])).map {
                    String(decoding: $0, as: UTF8.self)
                } ?? "{}"
            return (healthy ? .ok : .serviceUnavailable, "application/json", json + "\n")
        default:
            return (.notFound, "text/plain; charset=utf-8", "not found: try /metrics or /healthz\n")
        }
    }
}
