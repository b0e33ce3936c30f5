import ArgumentParser
import CommandLineSupport
import Foundation
import Hummingbird
import JobAPI
import JobAPIServer
import JobKinds
import JobctlCore
import Logging
import NIOCore
import Observability
import Queue
import SafeHTTP
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Serve the HTTP API (submit, show, wait, events, list, cancel, retry, deliveries) in front of the job database.",
        discussion: """
            Every route but /healthz and /openapi.json needs `Authorization: Bearer KEY` (jobctl \
            keys create). Any number of `jobctl serve` processes may sit in front of one database. \
            Local paths in requests are refused unless --input-root/--output-root are given; then \
            each key has its own directory under each root, ROOT/KEYID/, and its requests name \
            paths relative to it (workers must run with the same roots). HTTPS with --tls-cert/--tls-key, or behind a reverse proxy that terminates \
            TLS. Stops on SIGTERM/SIGINT after answering the requests in flight. docs/api.md.
            """
    )

    @Option(help: "HOST:PORT to listen on (port 0: any free port, printed at start).")
    var listen = "127.0.0.1:8080"

    @Option(help: "Accept local inputs, each key's in DIR/KEYID/, named relative to it (default: http(s) inputs only).")
    var inputRoot: String?

    @Option(
        help: "Accept local outputs, each key's in DIR/KEYID/, named relative to it (default: http(s) outputs only)."
    )
    var outputRoot: String?

    @OptionGroup var objects: ObjectRootOption

    @Option(help: "The longest ?wait= a request may ask for.")
    var maxWait = DurationArgument(.seconds(60))

    @Option(
        help: ArgumentHelp(
            "End an event stream after this long (its client reconnects by itself).",
            valueName: "duration"
        )
    )
    var maxStream = DurationArgument(.seconds(30 * 60))

    @Option(
        help: ArgumentHelp(
            "How long a request may take, reading its body included (408 after); long polls get their wait on top. Also how long an idle connection stays open.",
            valueName: "duration"
        )
    )
    var requestTimeout = DurationArgument(.seconds(30))

    @Option(
        help: ArgumentHelp(
            "Requests per second each API key may make to this process (bursts of twice that); 0: no limit.",
            valueName: "n"
        )
    )
    var rateLimit: Double = 100

    @Option(
        help: ArgumentHelp(
            "Long polls and event streams one API key may hold open on this process at once (429 past it).",
            valueName: "n"
        )
    )
    var maxWatchesPerKey = 1000

    @Flag(help: "Serve /metrics without a key (default: an admin key is needed).")
    var publicMetrics = false

    @Option(help: ArgumentHelp("Serve HTTPS with this PEM certificate chain (with --tls-key).", valueName: "path"))
    var tlsCert: String?

    @Option(help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "path"))
    var tlsKey: String?

    @Flag(
        help: ArgumentHelp(
            "Mark the dashboard's cookies Secure: jobctl is behind a reverse proxy that serves HTTPS (with --tls-cert they always are)."
        )
    )
    var secureCookies = false

    @Option(
        help: ArgumentHelp(
            "A reverse proxy in front of jobctl (an address or a range: 127.0.0.1, 10.0.0.0/8; repeat it or separate with commas): its X-Forwarded-For names the client whose failed sign-ins are counted (without it, the peer is the client).",
            valueName: "address"
        )
    )
    var trustedProxy: [String] = []

    @OptionGroup var webhooks: WebhookOptions
    @OptionGroup var presets: PresetOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard let (host, port) = Self.split(listen), (0...65535).contains(port) else {
            throw ValidationError("--listen is HOST:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080")
        }
        // An address of this machine, not a name to resolve (a name that does not resolve once
        // held the start for the resolver's timeout).
        guard host == "localhost" || IPAddress(host) != nil else {
            throw ValidationError(
                "--listen takes an IP address of this machine, e.g. 127.0.0.1:8080, 0.0.0.0:8080 or [::]:8080, not '\(host)'"
            )
        }
        for (flag, root) in [("--input-root", inputRoot), ("--output-root", outputRoot)] {
            guard let root else { continue }
            var isDirectory: ObjCBool = false
            guard root.hasPrefix("/"), FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory),
                isDirectory.boolValue
            else { throw ValidationError("\(flag) must be an absolute path to a directory") }
        }
        guard (tlsCert == nil) == (tlsKey == nil) else {
            throw ValidationError("--tls-cert and --tls-key go together")
        }
        // Below 0.01 a key would wait minutes for one request; 0 turns the limit off.
        guard rateLimit == 0 || (0.01...1_000_000).contains(rateLimit) else {
            throw ValidationError("--rate-limit is 0 (no limit) or between 0.01 and 1000000 requests a second")
        }
        guard requestTimeout.duration > .zero else { throw ValidationError("--request-timeout must be positive") }
        guard maxStream.duration > .zero else { throw ValidationError("--max-stream must be positive") }
        guard maxWatchesPerKey >= 1 else { throw ValidationError("--max-watches-per-key is at least 1") }
        _ = try proxies()
    }

    /// `--trusted-proxy`'s ranges.
    func proxies() throws -> TrustedProxies {
        let entries = trustedProxy.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        return TrustedProxies(
            try entries.map { entry in
                guard let range = AddressRange(entry) else {
                    throw ValidationError(
                        "--trusted-proxy takes an IP address or a range (127.0.0.1, 10.0.0.0/8, ::1), not '\(entry)'"
                    )
                }
                return range
            }
        )
    }

    static func split(_ address: String) -> (host: String, port: Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]) else {
            return nil
        }
        let host = String(address[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return host.isEmpty ? nil : (host, port)
    }

    func run() async throws {
        let logger = global.bootstrapLogging(defaultLevel: .info)
        try await reportingFailures {
            let catalog = try presets.catalog()
            let (host, port) = Self.split(listen)!
            let registry = PrometheusBootstrap.bootstrap()
            // While PostgreSQL is down, requests are answered 503 within a second, not held 15 s.
            try await database.withStore(failFast: true) { store in
                let configuration = APIConfiguration(
                    store: store,
                    catalog: catalog,
                    paths: PathConfinement(
                        inputRoot: inputRoot,
                        outputRoot: outputRoot,
                        objectRoot: objects.root
                    ),
                    policy: webhooks.policy,
                    maximumWait: maxWait.duration,
                    maximumStream: maxStream.duration,
                    requestTimeout: requestTimeout.duration,
                    rateLimit: rateLimit > 0 ? RateLimit(perSecond: rateLimit) : nil,
                    metrics: registry,
                    publicMetrics: publicMetrics,
                    maximumWatchesPerKey: maxWatchesPerKey,
                    secureCookies: secureCookies || tlsCert != nil,
                    trustedProxies: try proxies(),
                    objectStore: .environment
                )
                let scheme = tlsCert == nil ? "http" : "https"
                let app: APIService
                do {
                    app = try APIServer.application(
                        configuration,
                        host: host,
                        port: port,
                        tls: tlsCert.map { APIServer.TLSFiles(certificate: $0, privateKey: tlsKey ?? "") },
                        logger: logger
                    ) { address in
                        let shown = address.map { "\($0.ipAddress ?? host):\($0.port ?? port)" } ?? listen
                        Terminal.printError("listening on \(scheme)://\(shown)")
                        Terminal.printError(
                            "dashboard: \(scheme)://\(shown)/ui/ (sign in with an API key: jobctl keys create)"
                        )
                    }
                } catch let error as APIServerError {
                    throw CommandFailure.refused(code: .tlsInvalid, error.description)
                }
                let group = ServiceGroup(
                    configuration: .init(
                        services: [
                            app, QueueGauges(store: store, logger: logger), FleetSampler(store: store, logger: logger),
                            SearchIndexer(store: store, logger: logger),
                        ],
                        gracefulShutdownSignals: [.sigterm, .sigint],
                        logger: logger
                    )
                )
                do {
                    try await group.run()
                } catch {
                    guard let reason = Self.listenFailure(error) else { throw error }
                    throw CommandFailure.failed(code: .listenFailed, "cannot listen on \(listen): \(reason)")
                }
            }
        }
    }

    /// Why the listening socket could not be made, for `listen_failed` (not `internal`).
    static func listenFailure(_ error: any Error) -> String? {
        switch error {
        case let error as IOError:
            let reason = String(cString: strerror(error.errnoCode))
            return error.errnoCode == EADDRINUSE
                ? "\(reason) (another process listens there: `ss -ltnp`)"
                : error.errnoCode == EACCES ? "\(reason) (ports below 1024 need privileges)" : reason
        case is SocketAddressError, is SocketAddressError.UnknownHost:
            return
                "the host does not resolve to an address of this machine (give an IP address, e.g. 127.0.0.1 or 0.0.0.0)"
        default:
            return nil
        }
    }
}
