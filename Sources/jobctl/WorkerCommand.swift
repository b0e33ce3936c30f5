import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Logging
import NIOCore
import NIOPosix
import ObjectStorage
import Observability
import Prometheus
import Queue
import SafeHTTP
import ServiceLifecycle
import Worker

struct WorkerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker",
        abstract: "Run jobs from the queue until SIGTERM, SIGINT or SIGHUP.",
        discussion: """
            Claims up to --concurrency jobs at a time and runs them; start as many worker \
            processes as you like on the same database (one transcode saturates about 2 cores). \
            A running job renews its lease every third of --lease; if the worker dies, another \
            one takes the job over once the lease expires.

            On SIGTERM, SIGINT or SIGHUP the worker stops claiming, lets running jobs finish for \
            --drain, then hands the rest back to the queue (another worker resumes them) and exits 0.
            """
    )

    @Option(help: "Jobs run at once.")
    var concurrency = 1

    @Option(help: ArgumentHelp("How long a claim holds without renewal.", valueName: "duration"))
    var lease = DurationArgument(.seconds(30))

    @Option(
        help: ArgumentHelp(
            "On SIGTERM/SIGINT/SIGHUP, how long running jobs may finish before they are handed back.",
            valueName: "duration"
        )
    )
    var drain = DurationArgument(.seconds(30))

    @Option(help: "This worker's name in the job table (default HOST-PID).")
    var name: String?

    @Flag(help: "Exit once the queue is empty and nothing runs.")
    var once = false

    @Option(
        help: ArgumentHelp(
            "Where exports to http(s) outputs are written before their upload (default $TMPDIR/jobctl-staging).",
            valueName: "dir"
        )
    )
    var stagingDir: String?

    @Option(
        help: ArgumentHelp(
            "Where the parts of split exports are written (submit --split): one directory every worker of the fleet reaches, such as a shared mount, or an object store prefix every worker can write, s3://BUCKET/PREFIX/ (read with the AWS settings, as s3:// outputs are; give the prefix a lifecycle rule, see docs/operations.md). Default: the staging directory, enough for workers on one host. Env: JOBCTL_SCRATCH.",
            valueName: "dir|s3-prefix"
        )
    )
    var scratch: String?

    @OptionGroup var objects: ObjectRootOption

    @Option(
        help: ArgumentHelp(
            "Read local inputs only under this directory (after resolving .. and symlinks); others fail with input_not_found. An API key's jobs name paths relative to DIR/KEYID/ (jobctl serve's root) and stay in it.",
            valueName: "dir"
        )
    )
    var inputRoot: String?

    @Option(
        help: ArgumentHelp(
            "Write local outputs only under this directory; others fail with output_forbidden. An API key's jobs write only in DIR/KEYID/.",
            valueName: "dir"
        )
    )
    var outputRoot: String?

    @Option(
        help: ArgumentHelp(
            "Serve Prometheus metrics on /metrics and a health check on /healthz at this port (0: any free port, logged).",
            valueName: "port"
        )
    )
    var metricsPort: Int?

    @Option(help: ArgumentHelp("The address the metrics endpoint listens on.", valueName: "host"))
    var metricsHost = "0.0.0.0"

    /// How often the metrics count jobs by status (tests shorten it).
    @Option(help: .hidden)
    var metricsInterval = DurationArgument(.seconds(15))

    @Option(help: .hidden)
    var poll = DurationArgument(.milliseconds(100))

    /// How often a running job looks for a cancellation request besides notifications (tests
    /// lengthen it to prove PostgreSQL's NOTIFY delivers it).
    @Option(help: .hidden)
    var cancelPoll = DurationArgument(.milliseconds(500))

    /// The first retry's base delay (tests shorten it).
    @Option(help: .hidden)
    var retryDelay = DurationArgument(.seconds(5))

    @OptionGroup(title: "Limits (a job over one fails with limit_exceeded)") var limits: LimitOptions
    @OptionGroup var webhooks: WebhookOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    /// Jobs one worker process may run at once.
    static let concurrencyRange = DatabaseOptions.workerConcurrency

    func validate() throws {
        guard Self.concurrencyRange.contains(concurrency) else {
            throw ValidationError("--concurrency is between 1 and \(Self.concurrencyRange.upperBound)")
        }
        guard lease.duration >= .seconds(1) else { throw ValidationError("--lease is at least 1s") }
        if let metricsPort, !(0...65535).contains(metricsPort) {
            throw ValidationError("--metrics-port is between 0 and 65535")
        }
        if let scratch = scratch ?? ProcessInfo.processInfo.environment["JOBCTL_SCRATCH"],
            MediaLocation.isObjectStore(scratch)
        {
            if case .failure(let problem) = S3Location.parse(scratch) {
                throw ValidationError("--scratch: \(problem)")
            }
            guard !scratch.contains("{name}") else {
                throw ValidationError("--scratch is a prefix, s3://BUCKET/PREFIX/, not a key template")
            }
        }
        for (flag, root) in [("--input-root", inputRoot), ("--output-root", outputRoot)] {
            var isDirectory: ObjCBool = false
            if let root,
                !(FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) && isDirectory.boolValue)
            {
                throw ValidationError("\(flag) \(root) is not a directory")
            }
        }
    }

    func run() async throws {
        // Tasks run on NIO's event loop threads, where the database connections' I/O is: no
        // thread hop per query (PostgreSQL, 2 processes: ~25 % less CPU per job,
        // docs/benchmarks.md). Blocking work (FFmpeg, libcurl, SQLite) runs on threads of its own.
        NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        let logger = global.bootstrapLogging(defaultLevel: .info)
        try await reportingFailures {
            // Before anything records a metric.
            let registry = metricsPort != nil ? PrometheusBootstrap.bootstrap() : nil
            try await database.withStore { store in try await runWorker(store, registry: registry, logger: logger) }
        }
    }

    private func runWorker(
        _ store: any JobQueueDatabase,
        registry: PrometheusCollectorRegistry?,
        logger: Logger
    ) async throws {
        let host = ProcessInfo.processInfo.hostName
        let pid = ProcessInfo.processInfo.processIdentifier
        let identity = WorkerIdentity(name: name ?? "\(host)-\(pid)", host: host, pid: pid, version: JobCtl.version)
        let worker = Worker(
            store: store,
            options: WorkerOptions(
                name: identity.name,
                concurrency: concurrency,
                lease: lease.duration,
                drain: drain.duration,
                once: once,
                pollInterval: poll.duration,
                cancellationCheckInterval: cancelPoll.duration,
                retryPolicy: RetryPolicy(base: retryDelay.duration, maximum: max(retryDelay.duration, .seconds(600))),
                addressPolicy: webhooks.policy,
                stagingDirectory: stagingDir ?? WorkerOptions.defaultStagingDirectory,
                scratchDirectory: scratch ?? ProcessInfo.processInfo.environment["JOBCTL_SCRATCH"],
                inputRoot: inputRoot,
                outputRoot: outputRoot,
                objectRoot: objects.root,
                // The one place a worker's object store client comes from the environment.
                objectStore: .environment,
                limits: try limits.limits()
            ),
            identity: identity,
            logger: logger
        )
        // The worker returning (after --once, or after draining) ends the process normally.
        var services = [
            ServiceGroupConfiguration.ServiceConfiguration(
                service: worker,
                successTerminationBehavior: .gracefullyShutdownGroup
            )
        ]
        // The webhook dispatcher runs beside it. Services stop in reverse order: the worker
        // drains first, then the dispatcher delivers what is due (with --once) or in flight.
        let dispatcher = try webhooks.dispatcher(
            outbox: store,
            name: identity.name,
            drainDue: once ? drain.duration : nil,
            logger: logger
        )
        services.insert(.init(service: dispatcher), at: 0)
        // Metrics: the server goes first so that it stops last, answering while the worker drains.
        if let metricsPort {
            let gauges = QueueGauges(store: store, interval: metricsInterval.duration, logger: logger)
            let server = MetricsServer(
                host: metricsHost,
                port: metricsPort,
                registry: registry ?? PrometheusCollectorRegistry(),
                logger: logger
            ) {
                let database = gauges.database
                let (running, draining) = worker.state
                var details = [
                    "worker": identity.name, "database": database.reachable ? "ok" : "unreachable",
                    "running": "\(running)", "draining": "\(draining)",
                ]
                if let error = database.error { details["databaseError"] = error }
                if let damage = worker.databaseProblem {
                    details["database"] = "damaged"
                    details["databaseError"] = "\(damage.code): \(damage.message)"
                }
                return (database.reachable && !draining && worker.databaseProblem == nil, details)
            }
            services.insert(.init(service: gauges), at: 0)
            services.insert(.init(service: server), at: 0)
        }
        let group = ServiceGroup(
            // SIGHUP (a closed terminal or SSH session) drains like SIGTERM rather than killing
            // the worker mid-job.
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint, .sighup],
                logger: logger
            )
        )
        try await group.run()
    }
}
