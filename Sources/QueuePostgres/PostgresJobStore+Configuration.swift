import Foundation
import JobctlCore
import Logging
import NIOSSL
import PostgresNIO
import Queue

// The postgres:// URL, with libpq's sslmode meanings, as a client configuration.
extension PostgresJobStore {
    /// `postgres://user:password@host:port/database?sslmode=…&sslrootcert=PATH`, with libpq's
    /// meanings: `disable` (no TLS); `prefer` (the default: TLS if the server offers it) and
    /// `require` (TLS or nothing) encrypt without checking the certificate, as libpq does, so a
    /// server with a self-signed certificate (Debian's default) works; `verify-ca` checks the
    /// certificate against `sslrootcert` (else the system's roots); `verify-full` the host name too.
    package static func configuration(from url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url),
            ["postgres", "postgresql"].contains(components.scheme?.lowercased() ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw JobStoreError(
                .usage,
                "\(MediaLocation.withoutCredentials(url)) is not a postgres://user:password@host:port/database URL"
            )
        }
        func parameter(_ name: String) -> String? { components.queryItems?.first { $0.name == name }?.value }
        var tlsConfiguration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificate = parameter("sslrootcert") {
            guard FileManager.default.isReadableFile(atPath: rootCertificate) else {
                throw JobStoreError(.databaseUnavailable, "sslrootcert \(rootCertificate) cannot be read")
            }
            tlsConfiguration.trustRoots = .file(rootCertificate)
        }
        let mode = parameter("sslmode") ?? "prefer"
        let tls: PostgresClient.Configuration.TLS
        switch mode {
        case "disable":
            tls = .disable
        case "allow", "prefer", "require":
            tlsConfiguration.certificateVerification = .none
            tls = mode == "require" ? .require(tlsConfiguration) : .prefer(tlsConfiguration)
        case "verify-ca":
            tlsConfiguration.certificateVerification = .noHostnameVerification
            tls = .require(tlsConfiguration)
        case "verify-full":
            tlsConfiguration.certificateVerification = .fullVerification
            tls = .require(tlsConfiguration)
        default:
            throw JobStoreError(
                .usage,
                "sslmode=\(mode) is not one of disable, prefer, require, verify-ca, verify-full"
            )
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user ?? "postgres",
            password: components.password,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = 16
        return configuration
    }
}
