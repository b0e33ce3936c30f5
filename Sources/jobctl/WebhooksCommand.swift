import ArgumentParser
import CommandLineSupport
import Foundation
import JobctlCore
import Logging
import Queue
import SafeHTTP
import ServiceLifecycle
import Webhooks

struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "Webhook deliveries: the log, redelivery, secrets, and a stand-alone dispatcher.",
        discussion: """
            A job submitted with --webhook URL gets one signed POST per outcome (job.completed, \
            job.failed, job.cancelled), retried for 24 h (docs/webhooks.md). Workers deliver them; \
            set JOBCTL_WEBHOOK_SECRET (several, separated by spaces, while rotating) for workers.
            """,
        subcommands: [List.self, Redeliver.self, Secret.self, Dispatch.self]
    )

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliveries and every attempt: time, status code, latency, error."
        )

        @Option(help: "Only this job's deliveries.")
        var job: String?

        @Option(help: "At most this many deliveries.")
        var limit = 50

        @Flag(help: "Print JSON.")
        var json = false

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            _ = global.bootstrapLogging()
            try await reportingFailures {
                let job = try job.map(jobID)
                let deliveries = try await WebhooksCommand.withOutbox(database) {
                    try await $0.deliveries(job: job, limit: max(1, limit))
                }
                if json { return try JobFormatting.printJSON(deliveries) }
                if deliveries.isEmpty { Terminal.printError("no webhook deliveries") }
                for delivery in deliveries {
                    print(
                        Terminal.shown(
                            "\(delivery.id)  \(delivery.status.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)) \(delivery.type)  job \(delivery.jobID)  \(MediaLocation.displayed(delivery.url))"
                        )
                    )
                    for attempt in delivery.log {
                        let outcome = attempt.statusCode.map { "HTTP \($0)" } ?? "no response"
                        print(
                            Terminal.shown(
                                "    #\(attempt.attempt) \(Job.timestamp(attempt.at))  \(outcome)  \(attempt.latency) ms"
                                    + (attempt.error.map { "  \($0)" } ?? "") + "  (\(attempt.dispatcher))"
                            )
                        )
                    }
                    if delivery.status == .pending, let next = delivery.nextAttemptAt {
                        print("    next attempt \(Job.timestamp(next))")
                    }
                }
            }
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send a delivery again (same webhook-id) as soon as a dispatcher is free."
        )

        @Argument(help: "The delivery's id (msg_…).")
        var id: String

        @OptionGroup var database: DatabaseOptions
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            _ = global.bootstrapLogging()
            try await reportingFailures {
                let delivery = try await WebhooksCommand.withOutbox(database) { try await $0.redeliver(id) }
                print("\(delivery.id): queued for delivery to \(MediaLocation.displayed(delivery.url))")
            }
        }
    }

    struct Secret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a new webhook signing secret (whsec_…).",
            discussion:
                "export JOBCTL_WEBHOOK_SECRET=$(jobctl webhooks secret). Give the same secret to your webhook consumer."
        )

        func run() async throws { print(WebhookSecret.generate()) }
    }

    struct Dispatch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Deliver webhooks without running jobs, until SIGTERM/SIGINT (workers do this too)."
        )

        @OptionGroup var webhookOptions: WebhookOptions
        @OptionGroup var database: DatabaseOptions
        @OptionGroup var global: GlobalOptions

        func run() async throws {
            let logger = global.bootstrapLogging(defaultLevel: .info)
            try await reportingFailures {
                let host = ProcessInfo.processInfo.hostName
                try await WebhooksCommand.withOutbox(database) { outbox in
                    let dispatcher = try webhookOptions.dispatcher(
                        outbox: outbox,
                        name: "\(host)-\(ProcessInfo.processInfo.processIdentifier)",
                        drainDue: nil,
                        logger: logger
                    )
                    let group = ServiceGroup(
                        configuration: .init(
                            services: [dispatcher],
                            gracefulShutdownSignals: [.sigterm, .sigint],
                            logger: logger
                        )
                    )
                    try await group.run()
                }
            }
        }
    }

    static func withOutbox<T>(
        _ database: DatabaseOptions,
        _ body: (any JobQueueDatabase) async throws -> T
    ) async throws -> T {
        try await database.withStore(body)
    }
}

/// Webhook options of `worker` and `webhooks dispatch`.
struct WebhookOptions: ParsableArguments {
    @Flag(
        help:
            "Let webhooks, input URLs and output uploads reach loopback and private addresses (self-hosted receivers and storage, tests). Env: JOBCTL_ALLOW_PRIVATE_WEBHOOKS=1."
    )
    var allowPrivateWebhooks = false

    /// Shrinks the retry schedule (tests).
    @Option(help: .hidden)
    var webhookRetryScale: Double = 1

    @Option(help: "Webhook requests a dispatcher sends at once.")
    var webhookConcurrency = 8

    /// The request timeout (15 s; tests shorten it).
    @Option(help: .hidden)
    var webhookTimeout = DurationArgument(.seconds(15))

    var policy: AddressPolicy {
        var policy = AddressPolicy.fromEnvironment()
        if allowPrivateWebhooks { policy.allowPrivate = true }
        return policy
    }

    func dispatcher(
        outbox: any JobQueueDatabase,
        name: String,
        drainDue: Duration?,
        logger: Logger
    ) throws -> WebhookDispatcher {
        let secrets: [WebhookSecret]
        do { secrets = try WebhookSecret.fromEnvironment() } catch { throw CommandFailure.usage("\(error)") }
        guard webhookRetryScale > 0 else { throw CommandFailure.usage("--webhook-retry-scale must be positive") }
        return WebhookDispatcher(
            outbox: outbox,
            sender: HTTPSender(policy: policy, timeout: webhookTimeout.duration),
            secrets: secrets,
            options: .init(
                name: name,
                concurrency: max(1, webhookConcurrency),
                schedule: DeliverySchedule(scale: webhookRetryScale),
                drainDue: drainDue
            ),
            logger: logger
        )
    }
}
