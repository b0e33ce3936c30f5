import Foundation
import Queue
import Testing

/// The `WebhookOutbox` conformance suite: the outbox semantics of docs/spec.md §6 and the doc comments
/// of `WebhookOutbox`, written once against `any WebhookOutbox` and run against every store.
///
/// Like `JobStoreConformance`: a store's tests give a factory that opens several handles on one
/// fresh, empty database sharing a `TestClock`, and run each check as its own test case:
///
/// ```swift
/// @Test(arguments: WebhookOutboxConformance.Check.allCases)
/// func conformance(_ check: WebhookOutboxConformance.Check) async throws {
///     try await check.run { clock in
///         try (0..<4).map { _ in try SQLiteJobStore(path: path, clock: clock.now) }
///     }
/// }
/// ```
///
/// The checks report with `#expect` and `#require`, so they must run inside a Swift Testing test.
public enum WebhookOutboxConformance {
    /// Opens handles on ONE fresh, empty database, every one of them reading the time from
    /// `clock`. Separate handles stand for separate processes (workers and dispatchers).
    /// Give at least two; four is best.
    public typealias StoreFactory = @Sendable (_ clock: TestClock) async throws -> [any WebhookOutbox]

    /// One behaviour of an outbox, checked on its own fresh database.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// One event per terminal transition of a job with a webhook: `job.completed`,
        /// `job.failed` (final failure, attempts exhausted, lease lost on the last attempt),
        /// `job.cancelled` (queued cancel, confirmCancelled, release or retryable failure after a
        /// cancel request, lease expiry after a cancel request).
        case eventPerTerminalTransition
        /// No event for transitions that are not terminal (retryable failure with attempts left,
        /// release, lease expiry with attempts left) nor for jobs without a webhook.
        case noEventWithoutTerminalTransition
        /// `retry` makes no event; the second terminal status makes a second one, with a new id.
        case retryMakesSecondEvent
        /// The body: `type`, `timestamp` of the transition, `data` the job JSON at its terminal
        /// state, the webhook URL without credentials; the delivery keeps them to send.
        case payload
        /// Ids start with `msg_` and are unique; claims and listings agree on them.
        case ids
        /// Only due events are claimed, the longest due first, up to `limit`.
        case claimDue
        /// A leased event is not claimed again; after its lease expired another dispatcher
        /// takes it (same id), and the old lease's `record` writes nothing.
        case claimLease
        /// 24 events, 8 concurrent dispatchers over every handle: each event claimed once.
        case noDoubleClaimUnderContention
        /// `.delivered`: delivered, attempts 1, deliveredAt, lastStatusCode, never claimed again.
        case recordDelivered
        /// `.retry(after:)`: pending until now + delay, attempts counting up, every attempt logged.
        case recordRetry
        /// `.failed`: failed, never claimed again.
        case recordFailed
        /// `deliveries(job:limit:)`: newest first, filtered by job, limited.
        case deliveriesListing
        /// `redeliver`: delivered and failed events are sent again (same id, at once); unknown
        /// ids are `.notFound`; an event being sent is a `.conflict`.
        case redeliver
        /// A job graph: the parent's event once (a child's failure, or its join); children silent.
        case graphEvents

        public var description: String { rawValue }

        /// Runs this check on a fresh database from `factory`.
        public func run(_ factory: StoreFactory) async throws {
            let harness = try await OutboxHarness.make(factory)
            switch self {
            case .eventPerTerminalTransition: try await OutboxChecks.eventPerTerminalTransition(harness)
            case .noEventWithoutTerminalTransition: try await OutboxChecks.noEventWithoutTerminalTransition(harness)
            case .retryMakesSecondEvent: try await OutboxChecks.retryMakesSecondEvent(harness)
            case .payload: try await OutboxChecks.payload(harness)
            case .ids: try await OutboxChecks.ids(harness)
            case .claimDue: try await OutboxChecks.claimDue(harness)
            case .claimLease: try await OutboxChecks.claimLease(harness)
            case .noDoubleClaimUnderContention: try await OutboxChecks.noDoubleClaimUnderContention(harness)
            case .recordDelivered: try await OutboxChecks.recordDelivered(harness)
            case .recordRetry: try await OutboxChecks.recordRetry(harness)
            case .recordFailed: try await OutboxChecks.recordFailed(harness)
            case .deliveriesListing: try await OutboxChecks.deliveriesListing(harness)
            case .redeliver: try await OutboxChecks.redeliver(harness)
            case .graphEvents: try await OutboxChecks.graphEvents(harness)
            }
        }
    }
}
