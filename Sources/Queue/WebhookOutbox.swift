import Foundation
import JobctlCore

/// Where a webhook event stands (docs/spec.md §6).
public enum DeliveryStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Waiting for its first or next attempt.
    case pending
    /// Claimed by a dispatcher, being sent.
    case delivering
    /// A 2xx arrived.
    case delivered
    /// Retries ran out (about 24 h); `redeliver` sends it again.
    case failed
}

/// One attempt to deliver an event: the delivery log of `webhooks list`.
public struct DeliveryAttempt: Sendable, Hashable, Codable {
    public var attempt: Int
    public var at: Date
    public var statusCode: Int?
    /// Milliseconds from sending to the response (or the failure).
    public var latency: Int
    public var error: String?
    public var dispatcher: String

    public init(attempt: Int, at: Date, statusCode: Int?, latency: Int, error: String?, dispatcher: String) {
        self.attempt = attempt
        self.at = at
        self.statusCode = statusCode
        self.latency = latency
        self.error = error
        self.dispatcher = dispatcher
    }

    /// Every field, `statusCode` and `error` as `null` when absent (the API's document
    /// requires them).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(at, forKey: .at)
        try container.encode(statusCode, forKey: .statusCode)
        try container.encode(latency, forKey: .latency)
        try container.encode(error, forKey: .error)
        try container.encode(dispatcher, forKey: .dispatcher)
    }
}

/// An event for a job's webhook: written with the job's terminal status, in the same
/// transaction, then delivered (and retried) by a dispatcher.
public struct WebhookDelivery: Sendable, Hashable, Codable {
    /// The `webhook-id` header: the same for every attempt, so consumers can deduplicate.
    public var id: String
    public var jobID: JobID
    /// `job.completed`, `job.failed` or `job.cancelled`.
    public var type: String
    /// The URL as submitted (credentials included, to send); shown without them.
    public var url: String
    public var status: DeliveryStatus
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var createdAt: Date
    public var deliveredAt: Date?
    public var lastStatusCode: Int?
    public var lastError: String?
    public var log: [DeliveryAttempt]

    public init(
        id: String,
        jobID: JobID,
        type: String,
        url: String,
        status: DeliveryStatus,
        attempts: Int,
        nextAttemptAt: Date?,
        createdAt: Date,
        deliveredAt: Date?,
        lastStatusCode: Int?,
        lastError: String?,
        log: [DeliveryAttempt]
    ) {
        self.id = id
        self.jobID = jobID
        self.type = type
        self.url = url
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.deliveredAt = deliveredAt
        self.lastStatusCode = lastStatusCode
        self.lastError = lastError
        self.log = log
    }

    enum CodingKeys: String, CodingKey {
        case id
        case jobID = "jobId"
        case type, url, status, attempts, nextAttemptAt, createdAt, deliveredAt, lastStatusCode, lastError, log
    }

    /// Every field, `null` when absent; the URL without credentials.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(jobID, forKey: .jobID)
        try container.encode(type, forKey: .type)
        try container.encode(MediaLocation.displayed(url), forKey: .url)
        try container.encode(status, forKey: .status)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(deliveredAt, forKey: .deliveredAt)
        try container.encode(lastStatusCode, forKey: .lastStatusCode)
        try container.encode(lastError, forKey: .lastError)
        try container.encode(log, forKey: .log)
    }
}

/// A delivery claimed by a dispatcher: the exact body to sign and send, and its lease.
public struct ClaimedDelivery: Sendable, Hashable {
    public var delivery: WebhookDelivery
    /// The body, serialized once when the event was written; every attempt sends these bytes.
    public var payload: Data
    public var leaseToken: String
    public var dispatcher: String

    public init(delivery: WebhookDelivery, payload: Data, leaseToken: String, dispatcher: String) {
        self.delivery = delivery
        self.payload = payload
        self.leaseToken = leaseToken
        self.dispatcher = dispatcher
    }
}

extension ClaimedDelivery {
    /// The order claimed events are served in: the longest due first, then the oldest, then by id.
    public static func dueOrder(_ a: ClaimedDelivery, _ b: ClaimedDelivery) -> Bool {
        let dueA = a.delivery.nextAttemptAt ?? a.delivery.createdAt
        let dueB = b.delivery.nextAttemptAt ?? b.delivery.createdAt
        return (dueA, a.delivery.createdAt, a.delivery.id) < (dueB, b.delivery.createdAt, b.delivery.id)
    }
}

/// How an attempt ended, and what happens next.
public enum DeliveryOutcome: Sendable, Hashable {
    case delivered(DeliveryAttempt)
    case retry(DeliveryAttempt, after: Duration)
    case failed(DeliveryAttempt)
}

/// The webhook outbox: events written in the same transaction as a job's terminal status
/// (`job.completed`, `job.failed`, `job.cancelled` for jobs submitted with a webhook), and
/// claimed by dispatchers with a lease, like jobs. A store that has it writes the events in
/// every transition to a terminal status, `cancel` of a queued job included.
public protocol WebhookOutbox: JobStore {
    /// Claims up to `limit` events that are due, and events whose dispatcher's lease expired.
    func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery]

    /// Records an attempt and what comes next. `false`: the lease was lost (another dispatcher
    /// took the event over) and nothing was written.
    func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool

    /// Events with their attempts, newest first; all jobs' or one job's.
    func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery]

    /// Sends an event again as soon as a dispatcher is free (same `webhook-id`).
    func redeliver(_ id: String) async throws -> WebhookDelivery
}

/// The body of a webhook POST (docs/spec.md §6): `{"type": …, "timestamp": …, "data": <job JSON>}`.
public struct WebhookPayload: Sendable, Encodable {
    public var type: String
    public var timestamp: Date
    public var data: Job

    public init(type: String, timestamp: Date, data: Job) {
        self.type = type
        self.timestamp = timestamp
        self.data = data
    }
}
