import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import JobAPI
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// The server of `jobctl serve`: the routes on HTTP/1.1, or HTTPS with a certificate.
public enum APIServer {
    /// A PEM certificate chain and its private key.
    public struct TLSFiles: Sendable {
        public var certificate: String
        public var privateKey: String

        public init(certificate: String, privateKey: String) {
            self.certificate = certificate
            self.privateKey = privateKey
        }

        /// The server side of TLS 1.2 and later, with the chain and key read now (a bad file
        /// stops the server before it listens).
        func configuration() throws -> TLSConfiguration {
            let chain: [NIOSSLCertificate]
            let key: NIOSSLPrivateKey
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificate)
            } catch {
                throw APIServerError("cannot read the certificate \(certificate): \(error)")
            }
            guard !chain.isEmpty else { throw APIServerError("\(certificate) holds no PEM certificate") }
            do {
                key = try NIOSSLPrivateKey(file: privateKey, format: .pem)
            } catch {
                throw APIServerError("cannot read the private key \(privateKey): \(error)")
            }
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) },
                privateKey: .privateKey(key)
            )
            configuration.minimumTLSVersion = .tlsv12
            // A key that is not the certificate's is found now, with both named, not as a
            // bare `failedToLoadPrivateKey` when the server starts.
            do {
                _ = try NIOSSLContext(configuration: configuration)
            } catch {
                throw APIServerError("the key \(privateKey) does not go with the certificate \(certificate) (\(error))")
            }
            return configuration
        }
    }

    /// The application to run in a service group. A connection that sends nothing for the
    /// request timeout is closed, except while its response is being produced (a long poll,
    /// an event stream).
    public static func application(
        _ configuration: APIConfiguration,
        host: String,
        port: Int,
        tls: TLSFiles?,
        logger: Logger,
        onServerRunning: @escaping @Sendable (SocketAddress?) async -> Void
    ) throws -> APIService {
        let idle = TimeAmount.nanoseconds(
            configuration.requestTimeout.components.seconds * 1_000_000_000
                + configuration.requestTimeout.components.attoseconds / 1_000_000_000
        )
        let watch = APIRoutes.watch(configuration, logger: logger)
        let responder = router(configuration, watch: watch, logger: logger).buildResponder()
        let desk = PollDesk(responder: responder, logger: logger)
        let http = HTTPServerBuilder { responder in
            LongPollingHTTP1Channel(
                base: HTTP1Channel(responder: RequestTask.wrapping(responder), configuration: .init(idleTimeout: idle)),
                desk: desk,
                stalledReaderTimeout: idle
            )
        }
        let application = Application(
            responder: responder,
            server: try tls.map { try .tls(http, tlsConfiguration: try $0.configuration()) } ?? http,
            configuration: .init(address: .hostname(host, port: port), serverName: "jobctl"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress) },
            logger: logger
        )
        return APIService(application: application, watch: watch)
    }
}

/// `jobctl serve` as a service: the HTTP server, and on graceful shutdown every long poll
/// answered with its job as it is (the server closes each connection once its answer is out).
public struct APIService: Service {
    let application: Application<RouterResponder<APIRequestContext>>
    let watch: JobWatch

    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await application.run()
        } onGracefulShutdown: {
            watch.stopWaiting()
        }
    }
}

/// Each request runs in a child task of its own, not in its connection's task.
///
/// A task keeps the slabs its allocator grew to for as long as it lives: a connection's task
/// that ran the router and the middleware itself kept about 10 KB more after its first request,
/// for as long as the client kept the connection open (10,000 idle keep-alive clients after one
/// request: 352 MB, now 250 MB). A request's task gives its slabs back when it ends. The cost, a
/// task per request, did not show in the request rates (docs/benchmarks.md).
enum RequestTask {
    static func wrapping(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            let writer = WriterBox(writer)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await responder(request, writer.take(), channel) }
                try await group.waitForAll()
            }
        }
    }

    /// Hands the connection's response writer (not copyable) to the request's task.
    private final class WriterBox: @unchecked Sendable {
        private var writer: ResponseWriter?
        init(_ writer: consuming ResponseWriter) { self.writer = consume writer }
        func take() -> ResponseWriter { writer.take()! }
    }
}

/// A server that cannot start: the message says why.
public struct APIServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Closes a connection whose client stopped reading its response: the channel has not been
/// writable (more than NIO's high-water mark, 64 KB, waiting beyond what the kernel took) and
/// none of what waits has gone out for `timeout`. Without it a client that asks for large pages
/// and never reads them pins each response in the server's memory for as long as it keeps the
/// connection (150 such connections once took a server to 1.42 GB). A slow client that still
/// reads is not cut: each time the timer runs out, bytes sent since arm it again.
final class StalledReaderTimeout: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let timeout: TimeAmount
    private var scheduled: Scheduled<Void>?
    /// What waited to be sent when the timer was armed.
    private var waiting = 0

    init(timeout: TimeAmount) { self.timeout = timeout }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            scheduled?.cancel()
            scheduled = nil
        } else if scheduled == nil {
            arm(context)
        }
        context.fireChannelWritabilityChanged()
    }

    private func arm(_ context: ChannelHandlerContext) {
        waiting = Self.buffered(context)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        scheduled = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = (handler.value, bound.value)
            handler.scheduled = nil
            guard !context.channel.isWritable else { return }
            if Self.buffered(context) < handler.waiting {
                handler.arm(context)  // progress: a slow reader, not a stalled one
            } else {
                context.close(promise: nil)
            }
        }
    }

    private static func buffered(_ context: ChannelHandlerContext) -> Int {
        (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
    }

    func channelInactive(context: ChannelHandlerContext) {
        scheduled?.cancel()
        scheduled = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        scheduled?.cancel()
        scheduled = nil
    }
}
