import Foundation
import Logging
import PostgresNIO
import Queue
import Synchronization

// How the connection pool reports a connection it could not make, in words a person can act on.
extension PostgresJobStore {
    /// The pool's own logger: without its warning about leases asked for before `run()` has
    /// begun (`withStore` starts both at once, and the lease simply waits for the pool), and
    /// keeping the last reason a connection could not be made, for the error a command shows.
    static func backgroundLogger(_ logger: Logger, problems: ConnectionProblems) -> Logger {
        let level = logger.logLevel
        return Logger(label: logger.label) { _ in
            PoolLogHandler(wrapped: logger.handler, problems: problems, level: level)
        }
    }

    /// The same filter for a pool of jobctl's own outside a store (the benchmark's).
    package static func poolLogger(_ logger: Logger) -> Logger {
        backgroundLogger(logger, problems: ConnectionProblems())
    }

    /// The last reason the pool gave for not connecting, until a connection succeeds. A reason
    /// is final when waiting will not help: the server refused us (no such database or role, a
    /// wrong password) or its certificate is not trusted.
    final class ConnectionProblems: Sendable {
        private let last = Mutex<(reason: String, final: Bool, at: ContinuousClock.Instant)?>(nil)
        var lastFailure: (reason: String, final: Bool, at: ContinuousClock.Instant)? { last.withLock { $0 } }
        func failed(_ failure: (reason: String, final: Bool)) {
            last.withLock { $0 = (failure.reason, failure.final, .now) }
        }
        func connected() { last.withLock { $0 = nil } }
    }

    struct PoolLogHandler: LogHandler {
        var wrapped: any LogHandler
        let problems: ConnectionProblems
        /// The level asked for by the user; the pool's info events are read, not all shown.
        var level: Logger.Level
        var logLevel: Logger.Level {
            get { min(level, .info) }
            set { level = newValue }
        }
        var metadata: Logger.Metadata {
            get { wrapped.metadata }
            set { wrapped.metadata = newValue }
        }
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { wrapped[metadataKey: key] }
            set { wrapped[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            let message = "\(event.message)"
            if message == "Connection creation failed", let error = event.metadata?["psql_error"] {
                // Reported once, in the error of the operation that waited (the pool retries often).
                problems.failed(PostgresJobStore.connectionFailure("\(error)"))
                if level > .debug { return }
            } else if message == "Connection established" {
                problems.connected()
            }
            if event.level == .warning, message.hasPrefix("Trying to lease connection from `PostgresClient`") { return }
            if event.level >= level { wrapped.log(event: event) }
        }
    }

    /// A person's reading of the pool's description of a failed connection attempt, and whether
    /// it is final.
    static func connectionFailure(_ text: String) -> (reason: String, final: Bool) {
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return (
                "its TLS certificate is not trusted (give the CA with sslrootcert=PATH, or use sslmode=require to encrypt without checking the certificate)",
                true
            )
        }
        if text.contains("Connection refused") {
            return ("connection refused (is PostgreSQL running and listening on that host and port?)", false)
        }
        if text.contains("UnknownHost") { return ("the host name does not resolve", false) }
        if text.contains("connectTimeout") || text.contains("imeout") {
            return ("no answer within 10 s (a firewall, or the wrong host or port?)", false)
        }
        if text.contains("code: server"), let start = text.range(of: "message: ") {
            let rest = text[start.upperBound...]
            let end = rest.range(of: ", routine:")?.lowerBound ?? rest.range(of: "]")?.lowerBound ?? rest.endIndex
            // The server starting up or shutting down is worth waiting for.
            return (String(rest[..<end]), !text.contains("sqlState: 57P"))
        }
        return (String(text.prefix(300)), false)
    }
}
