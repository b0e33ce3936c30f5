import ArgumentParser
import Foundation
import Hummingbird
import JobAPI
import Logging
import Queue
import SafeHTTP
import ServiceLifecycle

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the HTTP API (submit, show, wait, list, cancel, retry) in front of the job database.",
        discussion: """
            Every route but /healthz needs `Authorization: Bearer KEY` (jobctl keys create). Any \
            number of `jobctl serve` processes may sit in front of one database. Local paths in \
            requests are refused unless --input-root/--output-root allow a directory. Stops on \
            SIGTERM/SIGINT after answering the requests in flight. docs/api.md.
            """
    )

    @Option(help: "HOST:PORT to listen on (port 0: any free port, printed at start).")
    var listen = "127.0.0.1:8080"

    @Option(help: "Accept local input paths under this directory (default: http(s) inputs only).")
    var inputRoot: String?

    @Option(help: "Accept local output paths under this directory (default: http(s) outputs only).")
    var outputRoot: String?

    @Option(help: "The longest ?wait= a request may ask for.")
    var maxWait = DurationArgument(.seconds(60))

    @OptionGroup var webhooks: WebhookOptions
    @OptionGroup var presets: PresetOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard let (_, port) = Self.split(listen), (0...65535).contains(port) else {
            throw ValidationError("--listen is HOST:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080")
        }
        for (flag, root) in [("--input-root", inputRoot), ("--output-root", outputRoot)] {
            guard let root else { continue }
            var isDirectory: ObjCBool = false
            guard root.hasPrefix("/"), FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory),
                isDirectory.boolValue
            else { throw ValidationError("\(flag) must be an absolute path to a directory") }
        }
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
            try await database.withStore(
                as: (any JobStore & APIKeyStore).self,
                lacking: "this job database keeps no API keys"
            ) { store in
                let router = APIRoutes.router(
                    APIConfiguration(
                        store: store,
                        catalog: catalog,
                        paths: PathScope(inputRoot: inputRoot, outputRoot: outputRoot),
                        policy: webhooks.policy,
                        maximumWait: maxWait.duration
                    ),
                    logger: logger
                )
                let app = Application(
                    router: router,
                    configuration: .init(address: .hostname(host, port: port), serverName: "jobctl"),
                    onServerRunning: { channel in
                        let address =
                            channel.localAddress.map { "\($0.ipAddress ?? host):\($0.port ?? port)" } ?? listen
                        Terminal.printError("listening on http://\(address)")
                    },
                    logger: logger
                )
                let group = ServiceGroup(
                    configuration: .init(
                        services: [app],
                        gracefulShutdownSignals: [.sigterm, .sigint],
                        logger: logger
                    )
                )
                try await group.run()
            }
        }
    }
}
