import Foundation
import JobctlCore
import Logging
import Metrics
import NIOPosix
import Queue
import SafeHTTP
import ServiceLifecycle

/// Delivers webhook events from the outbox (docs/spec.md §6), inside every worker or alone (`jobctl
/// webhooks dispatch`). Claims due events with a lease (a dead dispatcher's events are taken
/// over), sends them concurrently over libcurl, signs each attempt, records every attempt,
/// and schedules retries. At-least-once: consumers deduplicate on `webhook-id`.
public final class WebhookDispatcher: Service {
    public struct Options: Sendable {
        public var name: String
        public var concurrency: Int
        /// How long a claimed event is ours; above the 15 s request timeout.
        public var lease: Duration
        public var pollInterval: Duration
        public var schedule: DeliverySchedule
        /// On graceful shutdown, first deliver every event already due (a `worker --once`), for
        /// at most this long; otherwise only finish what is in flight.
        public var drainDue: Duration?

        public init(
            name: String,
            concurrency: Int = 8,
            lease: Duration = .seconds(60),
            pollInterval: Duration = .milliseconds(250),
            schedule: DeliverySchedule = DeliverySchedule(),
            drainDue: Duration? = nil
        ) {
            self.name = name
            self.concurrency = concurrency
            self.lease = lease
            self.pollInterval = pollInterval
            self.schedule = schedule
            self.drainDue = drainDue
        }
    }

    private let outbox: any WebhookOutbox & JobStoreChangeNotifying
    private let sender: HTTPSender
    private let secrets: [WebhookSecret]
    private let options: Options
    private let logger: Logger
    private let loop: ClaimLoop<DeliveryClaimer>
    /// Where requests block: one thread per delivery that may run at once, started with
    /// `run()` and shut down when it returns (not a new thread per webhook).
    private let pool: NIOThreadPool

    public init(
        outbox: any WebhookOutbox & JobStoreChangeNotifying,
        sender: HTTPSender,
        secrets: [WebhookSecret],
        options: Options,
        logger: Logger
    ) {
        self.outbox = outbox
        self.sender = sender
        self.secrets = secrets
        self.options = options
        var logger = logger
        logger[metadataKey: "dispatcher"] = "\(options.name)"
        self.logger = logger
        pool = NIOThreadPool(numberOfThreads: options.concurrency)
        let attempts = DeliveryAttempts(
            outbox: outbox,
            sender: sender,
            secrets: secrets,
            options: options,
            pool: pool,
            logger: logger
        )
        let configuration = ClaimLoopStateMachine.Configuration(
            concurrency: options.concurrency,
            drain: .claimDue(for: options.drainDue ?? .zero)
        )
        let changes: StoreChangeSource = { [outbox] wanted in outbox.changes(wanted: wanted) }
        loop = ClaimLoop(
            driver: DeliveryClaimer(attempts: attempts),
            configuration: configuration,
            pollInterval: options.pollInterval,
            changes: changes
        )
    }

    public func run() async throws {
        if secrets.isEmpty {
            logger.warning(
                "No webhook secret: set JOBCTL_WEBHOOK_SECRET (jobctl webhooks secret makes one); webhooks wait until then"
            )
        }
        pool.start()
        await withGracefulShutdownHandler {
            await loop.run()
        } onGracefulShutdown: { [loop] in
            loop.stop()
        }
        try? await pool.shutdownGracefully()
    }
}

/// The dispatcher's side of the claim loop: claims due deliveries (none without a secret to
/// sign them with) and makes one attempt at each.
struct DeliveryClaimer: ClaimLoopDriver {
    let attempts: DeliveryAttempts

    func claim(limit: Int) async throws -> [ClaimedDelivery] {
        guard !attempts.secrets.isEmpty else { return [] }
        return try await attempts.outbox.claimDeliveries(
            as: attempts.options.name,
            limit: limit,
            lease: attempts.options.lease
        )
    }

    func run(_ delivery: ClaimedDelivery, slot: ClaimSlot) async { await attempts.deliver(delivery) }

    var claimableChanges: StoreChange { .webhookDue }

    func classify(_ error: any Error) -> ClaimLoopStateMachine.ClaimFailure { .transient }

    func observe(_ event: ClaimLoopEvent) {
        if case .claimFailed(let error, _, let retryIn) = event {
            attempts.logger.error(
                "Claiming webhook deliveries failed",
                metadata: ["error": "\(error)", "retry.in": "\(retryIn)"]
            )
        }
    }
}

/// One delivery attempt at a time: sign, send, record, schedule.
struct DeliveryAttempts: Sendable {
    let outbox: any WebhookOutbox
    let sender: HTTPSender
    let secrets: [WebhookSecret]
    let options: WebhookDispatcher.Options
    let pool: NIOThreadPool
    let logger: Logger

    /// One attempt: sign, send, record, schedule.
    func deliver(_ claimed: ClaimedDelivery) async {
        let delivery = claimed.delivery
        let timestamp = Int64(Date().timeIntervalSince1970)
        let request = HTTPRequest(
            url: delivery.url,
            body: claimed.payload,
            headers: [
                ("webhook-id", delivery.id),
                ("webhook-timestamp", "\(timestamp)"),
                (
                    "webhook-signature",
                    WebhookSignature.sign(
                        id: delivery.id,
                        timestamp: timestamp,
                        body: claimed.payload,
                        secrets: secrets
                    )
                ),
            ]
        )
        let sender = self.sender
        let startedAt = Date()
        let response = (try? await pool.runIfActive { sender.post(request) }) ?? .notSent("the dispatcher is stopping")
        let attempt = DeliveryAttempt(
            attempt: delivery.attempts + 1,
            at: startedAt,
            statusCode: response.statusCode,
            latency: Int(response.latency.milliseconds),
            error: response.failure?.message,
            dispatcher: options.name
        )
        let outcome: DeliveryOutcome
        if response.succeeded {
            outcome = .delivered(attempt)
        } else if response.failed(with: .refused) {
            outcome = .failed(
                DeliveryAttempt(
                    attempt: attempt.attempt,
                    at: attempt.at,
                    statusCode: nil,
                    latency: attempt.latency,
                    error: "webhook_forbidden: \(response.failure?.message ?? "refused")",
                    dispatcher: options.name
                )
            )
        } else if let delay = options.schedule.delay(
            afterAttempt: attempt.attempt,
            eventAge: .milliseconds(Int64(Date().timeIntervalSince(delivery.createdAt) * 1000)),
            retryAfter: response.retryAfter
        ) {
            outcome = .retry(attempt, after: delay)
        } else {
            outcome = .failed(attempt)
        }
        var metadata: Logger.Metadata = [
            "webhook.id": "\(delivery.id)", "job.id": "\(delivery.jobID)", "webhook.attempt": "\(attempt.attempt)",
            "webhook.latency_ms": "\(attempt.latency)", "webhook.url": "\(MediaLocation.displayed(delivery.url))",
        ]
        if let status = response.statusCode { metadata["http.status"] = "\(status)" }
        if let error = attempt.error { metadata["error"] = "\(error)" }
        let result: String
        switch outcome {
        case .delivered:
            result = "delivered"
            logger.info("Webhook delivered", metadata: metadata)
        case .retry(_, let delay):
            result = "retry"
            logger.warning(
                "Webhook attempt failed; retrying",
                metadata: metadata.merging(["retry.in": "\(delay)"]) { $1 }
            )
        case .failed:
            result = "failed"
            logger.error("Webhook delivery failed for good", metadata: metadata)
        }
        WebhookMetrics.attempted(result: result, latency: response.latency)
        do {
            if try await !outbox.record(claimed, outcome: outcome) {
                logger.warning("Webhook lease lost while sending; another dispatcher owns it now", metadata: metadata)
            }
        } catch {
            logger.error(
                "Recording a webhook attempt failed; it will be sent again after its lease",
                metadata: metadata
            )
        }
    }
}

/// Every metric the dispatcher records, in one place.
enum WebhookMetrics {
    static func attempted(result: String, latency: Duration) {
        Counter(label: "jobctl_webhook_attempts_total", dimensions: [("result", result)]).increment()
        Metrics.Timer(label: "jobctl_webhook_latency_seconds").record(duration: latency)
    }
}
