import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL

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
    ) throws -> Application<RouterResponder<APIRequestContext>> {
        let idle = TimeAmount.nanoseconds(
            configuration.requestTimeout.components.seconds * 1_000_000_000
                + configuration.requestTimeout.components.attoseconds / 1_000_000_000
        )
        let http = HTTPServerBuilder.http1(configuration: .init(idleTimeout: idle))
        return Application(
            router: APIRoutes.router(configuration, logger: logger),
            server: try tls.map { try .tls(http, tlsConfiguration: try $0.configuration()) } ?? http,
            configuration: .init(address: .hostname(host, port: port), serverName: "jobctl"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress) },
            logger: logger
        )
    }
}

/// A server that cannot start: the message says why.
public struct APIServerError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
