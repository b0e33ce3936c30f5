import ArgumentParser
import CommandLineSupport
import Foundation
import Queue

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List jobs, newest first.")

    @Option(help: "Only jobs in this status: unknown (queued), reading (running), completed, failed, cancelled.")
    var status: JobStatus?

    @Option(help: "At most this many jobs.")
    var limit = 50

    @Option(
        help:
            "Only this job's children (a split export's segments, the outputs of --also); by default a graph's children are not listed."
    )
    var parent: String?

    @Flag(help: "Print a JSON list of jobs.")
    var json = false

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            var query = JobQuery(status: status, limit: max(1, limit))
            query.topLevelOnly = parent == nil
            query.parent = try parent.map { try jobID($0) }
            let jobs = try await database.withStore { try await $0.jobs(query) }
            if json { return try JobFormatting.printJSON(jobs) }
            if jobs.isEmpty { Terminal.printError("no jobs" + (status.map { " \($0)" } ?? "")) }
            for job in jobs { print(JobFormatting.line(job)) }
        }
    }
}

struct ShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show one job: status, progress, attempts, tracks, result, error.",
        discussion: "`--json` prints the job JSON of docs/spec.md §4 (docs/cli.md)."
    )

    @Argument(help: "The job's id.")
    var id: String

    @Flag(help: "Print the job as JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let id = try jobID(id)
            let (job, deliveries, children) = try await database.withStore { store in
                guard let job = try await store.job(id) else { throw JobStoreError.noJob(id) }
                var children: [Job] = []
                if let total = job.children?.total, total > 0 {
                    children = try await store.jobs(JobQuery(parent: id, limit: total))
                        .sorted { ($0.childIndex ?? 0) < ($1.childIndex ?? 0) }
                }
                return (job, try await store.deliveries(job: id, limit: 20), children)
            }
            if json {
                return try JobFormatting.printJSON(
                    ShownJob(job: job, webhookDeliveries: deliveries, childJobs: children.map(ChildSummary.init))
                )
            }
            print(JobFormatting.details(job))
            for line in JobFormatting.childLines(job, children) { print(line) }
            for delivery in deliveries {
                let last =
                    delivery.log.last.map { $0.statusCode.map { "HTTP \($0)" } ?? ($0.error ?? "no response") }
                    ?? "not sent yet"
                print(
                    Terminal.shown(
                        "  delivery  \(delivery.id) \(delivery.type): \(delivery.status), \(delivery.attempts) attempt(s), last \(last)"
                    )
                )
            }
        }
    }
}

struct CancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a job: a queued one at once, a running one within 2 s (its partial output is removed)."
    )

    @Argument(help: "The job's id.")
    var id: String

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let id = try jobID(id)
            switch try await database.withStore({ try await $0.cancel(id) }) {
            case .cancelled(let job):
                print("\(job.id): cancelled")
            case .requested(let job):
                print("\(job.id): cancellation requested; worker \(job.worker ?? "?") stops it within 2 s")
            }
        }
    }
}

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Run a failed or cancelled job again (same id, a new attempt).",
        discussion: """
            A job whose workers died on 3 attempts in a row (killed, crashed or frozen past their \
            lease) failed as a poison job (worker_crashed): it is not run again unless --force, \
            so that one input cannot take a fleet down worker after worker. Find the cause first \
            (the workers' logs, memory limits, `jobctl probe` on the input).
            """
    )

    @Argument(help: "The job's id.")
    var id: String

    @Flag(help: "Also run a poison job (worker_crashed) again.")
    var force = false

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let id = try jobID(id)
            let job = try await database.withStore { try await $0.retry(id, force: force) }
            print("\(job.id): queued again (attempt \(job.attempt + 1) of \(job.maxAttempts))")
        }
    }
}

struct WaitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until a job ends.",
        discussion: "Exit codes: 0 completed, 1 failed, 3 cancelled, 4 timed out (the job goes on)."
    )

    @Argument(help: "The job's id.")
    var id: String

    @Option(help: ArgumentHelp("Give up after this long (e.g. 30s, 10m, 2h).", valueName: "duration"))
    var timeout: DurationArgument?

    @Flag(help: "Print the ended job as JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    static let timedOutExitCode: Int32 = 4
    static let cancelledExitCode: Int32 = 3

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let id = try jobID(id)
            try await database.withStore {
                try await WaitCommand.waitFor(id, store: $0, timeout: timeout?.duration, json: json)
            }
        }
    }

    /// Polls until the job ends, prints it, and exits with its status's code.
    static func waitFor(_ id: JobID, store: any JobStore, timeout: Duration?, json: Bool) async throws {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            guard let job = try await store.job(id) else { throw JobStoreError.noJob(id) }
            if job.status.isTerminal {
                if json { try JobFormatting.printJSON(job) } else { print(JobFormatting.line(job)) }
                switch job.status {
                case .completed: return
                case .cancelled: throw ExitCode(cancelledExitCode)
                default:
                    if !json, let error = job.error { Terminal.printError("error: \(error.code): \(error.message)") }
                    throw ExitCode.failure
                }
            }
            if let deadline, ContinuousClock.now >= deadline {
                Terminal.printError("timed out: job \(id) is still \(job.status)")
                throw ExitCode(timedOutExitCode)
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create or upgrade the job database's schema (also done automatically on first use)."
    )

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            try await database.withStore { try await $0.migrate() }
            print("\(database.location): schema up to date")
        }
    }
}

extension JobStatus: ExpressibleByArgument {}

/// `show --json`: the job JSON plus its webhook deliveries.
struct ShownJob: Encodable {
    var job: Job
    var webhookDeliveries: [WebhookDelivery]
    /// A graph's parent's children, one line each (empty for other jobs).
    var childJobs: [ChildSummary] = []

    func encode(to encoder: any Encoder) throws {
        try job.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(webhookDeliveries, forKey: .webhookDeliveries)
        if job.children != nil { try container.encode(childJobs, forKey: .childJobs) }
    }

    enum Key: CodingKey { case webhookDeliveries, childJobs }
}

struct WorkersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workers",
        abstract: "List the worker processes that have used this job database, and the jobs they run now.",
        discussion: """
            A worker heartbeats every few seconds; one whose heartbeat is old and that has no stop \
            time died (its jobs are taken over once their leases expire).
            """
    )

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let workers = try await database.withStore { try await $0.workers() }
            if json { return try JobFormatting.printJSON(workers) }
            if workers.isEmpty { Terminal.printError("no workers yet") }
            for worker in workers {
                let age = Int(Date().timeIntervalSince(worker.heartbeatAt))
                let state = worker.stoppedAt != nil ? "stopped" : age > 60 ? "silent for \(age) s (dead?)" : "alive"
                print(
                    "\(worker.name)  \(worker.host) pid \(worker.pid)  v\(worker.version)  \(state), heartbeat \(Job.timestamp(worker.heartbeatAt))"
                        + (worker.runningJobs.isEmpty
                            ? "" : "  running " + worker.runningJobs.map(\.rawValue).joined(separator: ", "))
                )
            }
        }
    }
}
