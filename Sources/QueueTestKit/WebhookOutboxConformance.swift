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
public struct WebhookOutboxConformance: Sendable {
    /// Opens handles on ONE fresh, empty database, every one of them reading the time from
    /// `clock`. Separate handles stand for separate processes (workers and dispatchers).
    /// Give at least two; four is best.
    public typealias StoreFactory = @Sendable (_ clock: TestClock) async throws -> [any WebhookOutbox]

    public let factory: StoreFactory

    public init(factory: @escaping StoreFactory) {
        self.factory = factory
    }

    /// Runs one check on a fresh database from the factory.
    public func run(_ check: Check) async throws {
        try await check.run(factory)
    }

    /// Runs every check, each on its own fresh database.
    public func runAll() async throws {
        for check in Check.allCases { try await check.run(factory) }
    }

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
            }
        }
    }
}

// MARK: - Harness

/// The handles on one database, its clock, and the helpers every outbox check uses.
struct OutboxHarness: Sendable {
    let clock: TestClock
    let stores: [any WebhookOutbox]

    static func make(_ factory: WebhookOutboxConformance.StoreFactory) async throws -> OutboxHarness {
        let clock = TestClock()
        let stores = try await factory(clock)
        try #require(stores.count >= 2, "the outbox factory must return at least two handles; it returned \(stores.count)")
        for store in stores { try await store.migrate() }
        let jobs = try await stores[0].jobs(status: nil, limit: 1000)
        try #require(jobs.isEmpty, "the outbox factory must return handles on an empty database; it has \(jobs.count) jobs")
        let events = try await stores[0].deliveries(job: nil, limit: 1000)
        try #require(events.isEmpty, "the outbox factory must return handles on an empty database; it has \(events.count) events")
        return OutboxHarness(clock: clock, stores: stores)
    }

    var store: any WebhookOutbox { stores[0] }
    func handle(_ index: Int) -> any WebhookOutbox { stores[index % stores.count] }

    static let worker = WorkerIdentity(name: "worker-a", host: "host-a", pid: 101, version: "conformance")
    static let hook = "https://hooks.example/jobctl?source=conformance"

    /// Submits a job with a webhook (unless `webhook` is nil).
    @discardableResult
    func submit(
        _ name: String, webhook: String? = OutboxHarness.hook, maxAttempts: Int = 3, on index: Int = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Job {
        let request = JobRequest(
            input: "/data/\(name).mov", output: "/out/\(name).mp4", preset: "low", format: "mp4", maxAttempts: maxAttempts,
            metadata: ["name": name], webhook: webhook
        )
        let (job, created) = try await handle(index).submit(request)
        try #require(created, "submit of \(name) found an existing job", sourceLocation: sourceLocation)
        return job
    }

    /// Claims one job, which must be `id` (the caller made it the only claimable one).
    func claim(
        _ id: JobID, lease: Duration = .seconds(30), on index: Int = 1, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ClaimedJob {
        let claimed = try await handle(index).claim(as: OutboxHarness.worker, limit: 1, lease: lease)
        try #require(claimed.map(\.job.id) == [id], "claim expected job \(id), got \(claimed.map(\.job.input))", sourceLocation: sourceLocation)
        return claimed[0]
    }

    /// Submits a job with a webhook and completes it: one `job.completed` event, returned.
    @discardableResult
    func completedEvent(
        _ name: String, webhook: String = OutboxHarness.hook, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (job: Job, event: WebhookDelivery) {
        let job = try await submit(name, webhook: webhook, sourceLocation: sourceLocation)
        let claimed = try await claim(job.id, sourceLocation: sourceLocation)
        let completed = try await handle(2).complete(claimed.lease, result: .object(["output": .string(job.output)]), tracks: [])
        try #require(completed, "complete of \(name)", sourceLocation: sourceLocation)
        let events = try await handle(3).deliveries(job: job.id, limit: 10)
        try #require(events.count == 1, "completing \(name) wrote \(events.count) events, expected 1", sourceLocation: sourceLocation)
        return (try await fetch(job.id, sourceLocation: sourceLocation), events[0])
    }

    func fetch(_ id: JobID, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Job {
        try #require(try await store.job(id), "job \(id) is missing", sourceLocation: sourceLocation)
    }

    /// The job's events, newest first.
    func events(_ id: JobID, on index: Int = 0) async throws -> [WebhookDelivery] {
        try await handle(index).deliveries(job: id, limit: 100)
    }

    /// Expects the job to have exactly these event types (oldest first), the newest one written
    /// just now: pending, not attempted, due now, for the job's URL.
    func expectEvents(
        _ job: Job, _ types: [String], _ what: Comment, fresh: Bool = true, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let events = try await self.events(job.id, on: 1)
        #expect(events.reversed().map(\.type) == types, "\(what): events \(events.reversed().map(\.type))", sourceLocation: sourceLocation)
        guard fresh, let newest = events.first, events.count == types.count else { return }
        #expect(newest.jobID == job.id, "\(what)", sourceLocation: sourceLocation)
        #expect(newest.url == job.webhook, "\(what): the event is sent to the job's URL", sourceLocation: sourceLocation)
        #expect(newest.status == .pending, "\(what)", sourceLocation: sourceLocation)
        #expect(newest.attempts == 0, "\(what)", sourceLocation: sourceLocation)
        #expect(newest.log == [], "\(what)", sourceLocation: sourceLocation)
        #expect(newest.deliveredAt == nil, "\(what)", sourceLocation: sourceLocation)
        #expect(ms(newest.createdAt) == clock.milliseconds, "\(what): createdAt is the transition's time", sourceLocation: sourceLocation)
        #expect(ms(newest.nextAttemptAt) == clock.milliseconds, "\(what): due at once", sourceLocation: sourceLocation)
    }

    /// Claims events and expects exactly `ids`, in this order.
    @discardableResult
    func claimEvents(
        _ ids: [String], as dispatcher: String = "dispatcher-1", limit: Int = 10, lease: Duration = .seconds(60), on index: Int = 1,
        _ what: Comment, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [ClaimedDelivery] {
        let claimed = try await handle(index).claimDeliveries(as: dispatcher, limit: limit, lease: lease)
        #expect(claimed.map(\.delivery.id) == ids, what, sourceLocation: sourceLocation)
        for item in claimed {
            #expect(item.dispatcher == dispatcher, "\(what)", sourceLocation: sourceLocation)
            #expect(!item.leaseToken.isEmpty, "\(what)", sourceLocation: sourceLocation)
        }
        return claimed
    }

    /// One claimed event, which must be `id`.
    func claimEvent(
        _ id: String, as dispatcher: String = "dispatcher-1", lease: Duration = .seconds(60), on index: Int = 1,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ClaimedDelivery {
        let claimed = try await handle(index).claimDeliveries(as: dispatcher, limit: 10, lease: lease)
        try #require(claimed.map(\.delivery.id) == [id], "expected to claim event \(id), got \(claimed.map(\.delivery.id))", sourceLocation: sourceLocation)
        return claimed[0]
    }

    func expectNothingClaimed(_ why: Comment, on index: Int = 2, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let claimed = try await handle(index).claimDeliveries(as: "dispatcher-x", limit: 100, lease: .seconds(60))
        #expect(claimed.map(\.delivery.id) == [], why, sourceLocation: sourceLocation)
    }

    /// The event by id (from the listing of every event).
    func event(_ id: String, on index: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) async throws -> WebhookDelivery {
        let all = try await handle(index).deliveries(job: nil, limit: 1000)
        return try #require(all.first { $0.id == id }, "event \(id) is missing", sourceLocation: sourceLocation)
    }

    /// An attempt at the clock's time.
    func attempt(_ number: Int, status: Int?, latency: Int = 42, error: String? = nil, by dispatcher: String = "dispatcher-1") -> DeliveryAttempt {
        DeliveryAttempt(attempt: number, at: clock.date, statusCode: status, latency: latency, error: error, dispatcher: dispatcher)
    }

    func expectStoreError<T>(
        _ what: Comment, sourceLocation: SourceLocation = #_sourceLocation, matching: (JobStoreError.Kind) -> Bool,
        _ body: () async throws -> T
    ) async {
        do {
            let value = try await body()
            Issue.record("\(what): expected a JobStoreError, got \(value)", sourceLocation: sourceLocation)
        } catch let error as JobStoreError {
            #expect(matching(error.kind), "\(what): got \(error.kind): \(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(what): expected a JobStoreError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        }
    }
}

// MARK: - Checks

/// The checks of `WebhookOutboxConformance.Check`, one function each. Every check starts on an
/// empty database with the clock at `TestClock.defaultStart`, and asserts exact values.
enum OutboxChecks {
    static let retryableError = JobError(code: "internal", message: "the encoder crashed", retryable: true)
    static let finalError = JobError(code: "input_not_found", message: "/data/in.mov does not exist", retryable: false)

    // MARK: Which transitions write events

    static func eventPerTerminalTransition(_ h: OutboxHarness) async throws {
        var expected = 0

        // complete → job.completed.
        let completed = try await h.submit("completed")
        let completedClaim = try await h.claim(completed.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(2).complete(completedClaim.lease, result: .object(["output": .string("/out/completed.mp4")]), tracks: []))
        try await h.expectEvents(completed, ["job.completed"], "complete")
        expected += 1

        // A non-retryable failure → job.failed.
        h.clock.advance(by: .seconds(1))
        let final = try await h.submit("final")
        let finalClaim = try await h.claim(final.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(3).fail(finalClaim.lease, error: finalError, retryDelay: .seconds(10)))
        try await h.expectEvents(final, ["job.failed"], "non-retryable failure")
        expected += 1

        // Retryable failures until no attempt is left → one job.failed, at the last one.
        let exhausted = try await h.submit("exhausted", maxAttempts: 2)
        let firstAttempt = try await h.claim(exhausted.id)
        #expect(try await h.store.fail(firstAttempt.lease, error: retryableError, retryDelay: .zero))
        try await h.expectEvents(exhausted, [], "retryable failure, attempt 1 of 2")
        let secondAttempt = try await h.claim(exhausted.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.fail(secondAttempt.lease, error: retryableError, retryDelay: .zero))
        try await h.expectEvents(exhausted, ["job.failed"], "retryable failure, attempt 2 of 2")
        expected += 1

        // cancel of a queued job → job.cancelled.
        let queued = try await h.submit("queued")
        h.clock.advance(by: .seconds(1))
        guard case .cancelled = try await h.handle(1).cancel(queued.id) else {
            Issue.record("cancel of a queued job did not cancel it")
            return
        }
        try await h.expectEvents(queued, ["job.cancelled"], "cancel of a queued job")
        expected += 1

        // cancel of a running job: no event for the request; confirmCancelled → job.cancelled.
        let running = try await h.submit("running")
        let runningClaim = try await h.claim(running.id)
        h.clock.advance(by: .seconds(1))
        guard case .requested = try await h.handle(2).cancel(running.id) else {
            Issue.record("cancel of a running job was not a request")
            return
        }
        try await h.expectEvents(running, [], "a cancel request is not terminal")
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(3).confirmCancelled(runningClaim.lease))
        try await h.expectEvents(running, ["job.cancelled"], "confirmCancelled")
        expected += 1

        // release of a running job whose cancel was requested → job.cancelled.
        let released = try await h.submit("released")
        let releasedClaim = try await h.claim(released.id)
        _ = try await h.store.cancel(released.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(1).release(releasedClaim.lease))
        try await h.expectEvents(released, ["job.cancelled"], "release after a cancel request")
        expected += 1

        // A retryable failure of a running job whose cancel was requested → job.cancelled.
        let failedAfterCancel = try await h.submit("failed-after-cancel")
        let failedAfterCancelClaim = try await h.claim(failedAfterCancel.id)
        _ = try await h.store.cancel(failedAfterCancel.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(1).fail(failedAfterCancelClaim.lease, error: retryableError, retryDelay: .zero))
        #expect(try await h.fetch(failedAfterCancel.id).status == .cancelled)
        try await h.expectEvents(failedAfterCancel, ["job.cancelled"], "retryable failure after a cancel request")
        expected += 1

        // A running job with a cancel request whose worker died → job.cancelled at the next claim.
        let orphan = try await h.submit("orphan")
        _ = try await h.claim(orphan.id, lease: .seconds(30))
        _ = try await h.store.cancel(orphan.id)
        h.clock.advance(by: .seconds(31))
        let none = try await h.handle(2).claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
        #expect(none.map(\.job.input) == [], "the orphan is cancelled, not run again")
        #expect(try await h.fetch(orphan.id).status == .cancelled)
        try await h.expectEvents(orphan, ["job.cancelled"], "lease expired after a cancel request")
        expected += 1

        // The lease of the last attempt expired → job.failed (lease_lost) at the next claim.
        let abandoned = try await h.submit("abandoned", maxAttempts: 1)
        _ = try await h.claim(abandoned.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        let nothing = try await h.handle(3).claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
        #expect(nothing.map(\.job.input) == [])
        #expect(try await h.fetch(abandoned.id).error?.code == "lease_lost")
        try await h.expectEvents(abandoned, ["job.failed"], "lease lost on the last attempt")
        expected += 1
        if let event = try await h.events(abandoned.id).first {
            let claimed = try await h.claimEvents(
                try await h.store.deliveries(job: nil, limit: 100).reversed().map(\.id), limit: 100, "every event written so far is due"
            )
            if let item = claimed.first(where: { $0.delivery.id == event.id }) {
                let body = try JSONDecoder().decode(JSONValue.self, from: item.payload)
                #expect(body["type"] == .string("job.failed"))
                #expect(body["data"]?["status"] == .string("failed"))
                #expect(body["data"]?["error"]?["code"] == .string("lease_lost"), "the lease_lost event carries the job's error")
            }
        }

        let all = try await h.handle(1).deliveries(job: nil, limit: 100)
        #expect(all.count == expected, "one event per terminal transition: \(all.map(\.type))")
    }

    static func noEventWithoutTerminalTransition(_ h: OutboxHarness) async throws {
        // A retryable failure with attempts left.
        let flaky = try await h.submit("flaky", maxAttempts: 3)
        let flakyClaim = try await h.claim(flaky.id)
        #expect(try await h.store.fail(flakyClaim.lease, error: retryableError, retryDelay: .seconds(60)))
        #expect(try await h.fetch(flaky.id).status == .unknown)
        try await h.expectEvents(flaky, [], "a retryable failure with attempts left")

        // A release without a cancel request.
        let released = try await h.submit("released")
        let releasedClaim = try await h.claim(released.id)
        #expect(try await h.store.release(releasedClaim.lease))
        #expect(try await h.fetch(released.id).status == .unknown)
        try await h.expectEvents(released, [], "a release")

        // A lease expiry with attempts left: back to the queue, claimed again.
        let expired = try await h.claim(released.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        let reclaimed = try await h.claim(released.id, on: 2)
        #expect(reclaimed.lease.token != expired.lease.token)
        try await h.expectEvents(released, [], "a lease expiry with attempts left")
        _ = try await h.handle(3).heartbeat(reclaimed.lease, progress: 0.5, tracks: [], extendBy: .seconds(30))
        try await h.expectEvents(released, [], "a heartbeat")

        // Jobs without a webhook: completed, failed, cancelled (queued and running), lease lost.
        let plainCompleted = try await h.submit("plain-completed", webhook: nil)
        let plainCompletedClaim = try await h.claim(plainCompleted.id)
        #expect(try await h.store.complete(plainCompletedClaim.lease, result: .object([:]), tracks: []))
        let plainFailed = try await h.submit("plain-failed", webhook: nil)
        let plainFailedClaim = try await h.claim(plainFailed.id)
        #expect(try await h.store.fail(plainFailedClaim.lease, error: finalError, retryDelay: .zero))
        let plainQueued = try await h.submit("plain-queued", webhook: nil)
        _ = try await h.store.cancel(plainQueued.id)
        let plainRunning = try await h.submit("plain-running", webhook: nil)
        let plainRunningClaim = try await h.claim(plainRunning.id)
        _ = try await h.store.cancel(plainRunning.id)
        #expect(try await h.store.confirmCancelled(plainRunningClaim.lease))
        let plainLost = try await h.submit("plain-lost", webhook: nil, maxAttempts: 1)
        _ = try await h.claim(plainLost.id, lease: .seconds(30))
        h.clock.advance(by: .seconds(31))
        _ = try await h.store.claim(as: OutboxHarness.worker, limit: 10, lease: .seconds(30))
        for job in [plainCompleted, plainFailed, plainQueued, plainRunning, plainLost] {
            #expect(try await h.fetch(job.id).status.isTerminal, "\(job.input) has ended")
            try await h.expectEvents(job, [], "a job without a webhook: \(job.input)")
        }

        #expect(try await h.store.deliveries(job: nil, limit: 100).map(\.type) == [], "no event at all")
        try await h.expectNothingClaimed("no event to claim")
    }

    static func retryMakesSecondEvent(_ h: OutboxHarness) async throws {
        let job = try await h.submit("twice")
        let first = try await h.claim(job.id)
        #expect(try await h.store.fail(first.lease, error: finalError, retryDelay: .zero))
        try await h.expectEvents(job, ["job.failed"], "the first attempt failed")
        h.clock.advance(by: .seconds(1))
        _ = try await h.handle(1).retry(job.id)
        try await h.expectEvents(job, ["job.failed"], "retry itself is not terminal", fresh: false)
        let second = try await h.claim(job.id)
        h.clock.advance(by: .seconds(1))
        #expect(try await h.store.complete(second.lease, result: .object(["output": .string(job.output)]), tracks: []))
        try await h.expectEvents(job, ["job.failed", "job.completed"], "the retried job completed")
        let events = try await h.events(job.id)
        try #require(events.count == 2)
        #expect(events[0].id != events[1].id, "a second terminal status is a second event, with its own id")

        // Both are delivered separately, each with its own body.
        let claimed = try await h.claimEvents([events[1].id, events[0].id], "both events are due, the older first")
        let bodies = try claimed.map { try JSONDecoder().decode(JSONValue.self, from: $0.payload) }
        #expect(bodies.map { $0["type"] } == [.string("job.failed"), .string("job.completed")])
        #expect(bodies.map { $0["data"]?["attempt"] } == [.number(1), .number(2)])

        // A cancelled job retried and cancelled again: two job.cancelled events.
        let queued = try await h.submit("queued")
        _ = try await h.store.cancel(queued.id)
        _ = try await h.store.retry(queued.id)
        h.clock.advance(by: .seconds(1))
        _ = try await h.store.cancel(queued.id)
        try await h.expectEvents(queued, ["job.cancelled", "job.cancelled"], "cancelled, retried, cancelled again")
        let cancelledEvents = try await h.events(queued.id)
        #expect(Set(cancelledEvents.map(\.id)).count == cancelledEvents.count)
    }

    // MARK: The body

    static func payload(_ h: OutboxHarness) async throws {
        let secretURL = "https://user:pa55@hooks.example/jobctl/done?token=abc#frag"
        // Credentials and the query (a token, like a pre-signed URL's signature) are never shown.
        let redacted = "https://hooks.example/jobctl/done"
        #expect(JobRequest.displayURL(secretURL) == redacted)

        // completed, with tracks and a result.
        let completed = try await h.submit("completed", webhook: secretURL)
        let completedClaim = try await h.claim(completed.id)
        h.clock.advance(by: .milliseconds(1500))
        let result: JSONValue = .object(["output": .string("/out/completed.mp4"), "bytes": .number(1234), "duration": .number(3.04)])
        let tracks = [JobTrack(index: 0, sourceIndex: 0, mediaType: "video", status: .completed, codec: "h264", read: 90, written: 90)]
        #expect(try await h.store.complete(completedClaim.lease, result: result, tracks: tracks))
        let completedAt = h.clock.date
        h.clock.advance(by: .seconds(2))

        // failed.
        let failed = try await h.submit("failed", webhook: secretURL)
        let failedClaim = try await h.claim(failed.id)
        h.clock.advance(by: .milliseconds(250))
        #expect(try await h.store.fail(failedClaim.lease, error: finalError, retryDelay: .zero))
        let failedAt = h.clock.date
        h.clock.advance(by: .seconds(2))

        // cancelled while queued.
        let cancelled = try await h.submit("cancelled", webhook: secretURL)
        h.clock.advance(by: .milliseconds(7))
        _ = try await h.store.cancel(cancelled.id)
        let cancelledAt = h.clock.date
        h.clock.advance(by: .seconds(2))

        let claimed = try await h.handle(2).claimDeliveries(as: "dispatcher-1", limit: 10, lease: .seconds(60))
        #expect(claimed.count == 3)
        let cases: [(Job, String, Date)] = [(completed, "job.completed", completedAt), (failed, "job.failed", failedAt), (cancelled, "job.cancelled", cancelledAt)]
        for (submitted, type, at) in cases {
            guard let item = claimed.first(where: { $0.delivery.jobID == submitted.id }) else {
                Issue.record("no event claimed for \(submitted.input)")
                continue
            }
            let job = try await h.fetch(submitted.id)
            #expect(job.status.isTerminal)
            #expect(item.delivery.type == type)
            #expect(item.delivery.url == secretURL, "\(type): the delivery keeps the credentials, to send them")
            let text = String(decoding: item.payload, as: UTF8.self)
            #expect(!text.contains("pa55"), "\(type): the body never carries the URL's credentials: \(text)")

            let body = try JSONDecoder().decode(JSONValue.self, from: item.payload)
            guard case .object(let fields) = body else {
                Issue.record("\(type): the body is not a JSON object: \(text)")
                continue
            }
            #expect(Set(fields.keys) == ["type", "timestamp", "data"], "\(type): \(fields.keys.sorted())")
            #expect(body["type"] == .string(type))
            #expect(body["timestamp"] == .string(Job.timestamp(at)), "\(type): the time of the transition, ISO 8601 UTC")
            if let timestamp = body["timestamp"]?.stringValue {
                let parsed = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(timestamp)
                #expect(ms(parsed) == ms(at), "\(type): \(timestamp) parses back to the transition's time")
                #expect(timestamp.hasSuffix("Z"), "\(type): UTC")
            }
            let jobJSON = try JSONDecoder().decode(JSONValue.self, from: Job.makeJSONEncoder(pretty: false).encode(job))
            #expect(body["data"] == jobJSON, "\(type): data is the job's JSON at its terminal state")
            let data = body["data"]
            #expect(data?["id"] == .string(job.id.rawValue))
            #expect(data?["status"] == .string(job.status.rawValue))
            #expect(data?["webhook"] == .string(redacted), "\(type): the webhook URL without credentials or query")
            #expect(data?["finishedAt"] == .string(Job.timestamp(at)))
            switch type {
            case "job.completed":
                #expect(data?["result"] == result)
                #expect(data?["error"] == .null)
                #expect(data?["progress"] == .number(1))
                #expect(data?["tracks"]?.arrayCount == 1)
            case "job.failed":
                #expect(data?["result"] == .null)
                #expect(data?["error"]?["code"] == .string(finalError.code))
                #expect(data?["error"]?["message"] == .string(finalError.message))
                #expect(data?["error"]?["retryable"] == .bool(false))
            default:
                #expect(data?["result"] == .null)
                #expect(data?["error"] == .null)
            }

            // The delivery as listed and as JSON: the URL without credentials when encoded.
            let listed = try await h.events(submitted.id)
            #expect(listed.map(\.url) == [secretURL])
            let encoded = try JSONEncoder().encode(item.delivery)
            let delivery = try JSONDecoder().decode(JSONValue.self, from: encoded)
            #expect(delivery["url"] == .string(redacted), "\(type): the delivery's JSON shows the URL without credentials or query")
            #expect(!String(decoding: encoded, as: UTF8.self).contains("pa55"))
            #expect(delivery["id"] == .string(item.delivery.id))
            #expect(delivery["jobId"] == .string(job.id.rawValue))
        }

        // Every attempt sends the same bytes: a retried event's payload is unchanged.
        if let first = claimed.first {
            #expect(try await h.handle(1).record(first, outcome: .retry(h.attempt(1, status: 500, error: "HTTP 500"), after: .seconds(1))))
            h.clock.advance(by: .seconds(1))
            let again = try await h.claimEvent(first.delivery.id, on: 3)
            #expect(again.payload == first.payload, "the body is serialized once, when the event is written")
        }
    }

    static func ids(_ h: OutboxHarness) async throws {
        var ids: [String] = []
        for index in 0..<10 {
            let (_, event) = try await h.completedEvent("job-\(index)")
            ids.append(event.id)
            if index % 3 == 0 { h.clock.advance(by: .milliseconds(1)) }
        }
        for id in ids {
            #expect(id.hasPrefix("msg_"), "\(id) starts with msg_")
            #expect(id.count > 4, "\(id) has something after msg_")
            #expect(id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }, "\(id): a header-safe id")
        }
        #expect(Set(ids).count == ids.count, "every event has its own id: \(ids)")
        let claimed = try await h.handle(2).claimDeliveries(as: "dispatcher-1", limit: 100, lease: .seconds(60))
        #expect(Set(claimed.map(\.delivery.id)) == Set(ids), "claims give the listed ids")
        for index in h.stores.indices {
            let listed = try await h.handle(index).deliveries(job: nil, limit: 100)
            #expect(Set(listed.map(\.id)) == Set(ids), "handle \(index) lists the same ids")
        }
    }

    // MARK: Claiming

    static func claimDue(_ h: OutboxHarness) async throws {
        // A: written at t0, attempted at once, retried in 60 s.
        let (_, a) = try await h.completedEvent("a")
        let aClaim = try await h.claimEvents([a.id], "a fresh event is due at once")
        if let aClaim = aClaim.first {
            #expect(try await h.store.record(aClaim, outcome: .retry(h.attempt(1, status: 500, error: "HTTP 500"), after: .seconds(60))))
        }
        try await h.expectNothingClaimed("A waits 60 s for its retry")

        // B, C, D: written 10 s later, 1 ms apart, due at once.
        h.clock.advance(by: .seconds(10))
        let (_, b) = try await h.completedEvent("b")
        h.clock.advance(by: .milliseconds(1))
        let (_, c) = try await h.completedEvent("c")
        h.clock.advance(by: .milliseconds(1))
        let (_, d) = try await h.completedEvent("d")

        h.clock.advance(by: .milliseconds(49_997))  // t0 + 59.999 s
        try await h.claimEvents([b.id, c.id], limit: 2, on: 2, "limit 2: the two longest due, oldest first")
        h.clock.advance(by: .milliseconds(1))  // t0 + 60 s: A is due, after D
        try await h.claimEvents([d.id, a.id], as: "dispatcher-2", limit: 10, on: 3, "D (due at t0 + 10.002 s), then A (due at t0 + 60 s)")
        try await h.expectNothingClaimed("every event is leased")

        // limit 1, one by one.
        h.clock.advance(by: .seconds(1))
        let e = try await h.completedEvent("e").event
        h.clock.advance(by: .milliseconds(1))
        let f = try await h.completedEvent("f").event
        try await h.claimEvents([e.id], limit: 1, on: 0, "limit 1: the oldest")
        try await h.claimEvents([f.id], limit: 1, on: 1, "limit 1: the next")
        try await h.expectNothingClaimed("all claimed")
    }

    static func claimLease(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("leased")
        let first = try await h.claimEvent(event.id, as: "dispatcher-1", lease: .seconds(30), on: 1)
        #expect(first.delivery.status == .delivering, "a claimed event is being delivered")
        #expect(first.delivery.attempts == 0)
        #expect(try await h.event(event.id).status == .delivering)
        try await h.expectNothingClaimed("the event is leased for 30 s", on: 2)
        h.clock.advance(by: .seconds(29))
        try await h.expectNothingClaimed("the lease has 1 s left", on: 3)

        h.clock.advance(by: .seconds(2))
        let second = try await h.claimEvent(event.id, as: "dispatcher-2", lease: .seconds(30), on: 2)
        #expect(second.delivery.id == first.delivery.id, "the same event, the same webhook-id")
        #expect(second.payload == first.payload, "the same bytes")
        #expect(second.leaseToken != first.leaseToken, "a new lease")
        #expect(second.dispatcher == "dispatcher-2")
        try await h.expectNothingClaimed("dispatcher-2 holds the lease now", on: 0)

        // The old lease writes nothing, whatever the outcome.
        h.clock.advance(by: .seconds(1))
        #expect(try await h.handle(3).record(first, outcome: .delivered(h.attempt(1, status: 200))) == false, "stale delivered")
        #expect(try await h.handle(3).record(first, outcome: .retry(h.attempt(1, status: 500), after: .seconds(5))) == false, "stale retry")
        #expect(try await h.handle(3).record(first, outcome: .failed(h.attempt(1, status: 410))) == false, "stale failed")
        let untouched = try await h.event(event.id)
        #expect(untouched.status == .delivering)
        #expect(untouched.attempts == 0)
        #expect(untouched.log == [])
        #expect(untouched.deliveredAt == nil)
        #expect(untouched.lastStatusCode == nil)
        #expect(untouched.lastError == nil)

        // The new lease records; then it is spent too.
        #expect(try await h.handle(1).record(second, outcome: .delivered(h.attempt(1, status: 204, by: "dispatcher-2"))))
        let delivered = try await h.event(event.id)
        #expect(delivered.status == .delivered)
        #expect(delivered.attempts == 1)
        #expect(delivered.log.map(\.dispatcher) == ["dispatcher-2"])
        #expect(try await h.handle(1).record(second, outcome: .failed(h.attempt(2, status: 500, by: "dispatcher-2"))) == false, "a lease records once")
        #expect(try await h.handle(1).record(first, outcome: .failed(h.attempt(2, status: 500))) == false)
        let final = try await h.event(event.id)
        #expect(final.status == .delivered)
        #expect(final.attempts == 1)
        #expect(final.log.count == 1)
    }

    static func noDoubleClaimUnderContention(_ h: OutboxHarness) async throws {
        var jobs: [Job] = []
        for index in 0..<24 { jobs.append(try await h.submit("job-\(index)", on: index)) }
        let claimedJobs = try await h.store.claim(as: OutboxHarness.worker, limit: 24, lease: .seconds(600))
        #expect(claimedJobs.count == 24)
        for (index, item) in claimedJobs.enumerated() {
            #expect(try await h.handle(index).complete(item.lease, result: .object([:]), tracks: []))
            if index % 5 == 0 { h.clock.advance(by: .milliseconds(1)) }
        }
        let written = try await h.store.deliveries(job: nil, limit: 100).map(\.id)
        #expect(written.count == 24)

        let perTask = try await withThrowingTaskGroup(of: (String, [ClaimedDelivery]).self) { group in
            for task in 0..<8 {
                let store = h.handle(task)
                let name = "dispatcher-\(task)"
                let limit = 1 + task % 3
                group.addTask {
                    var mine: [ClaimedDelivery] = []
                    for _ in 0..<100 {
                        let batch = try await store.claimDeliveries(as: name, limit: limit, lease: .seconds(600))
                        if batch.isEmpty { return (name, mine) }
                        #expect(batch.count <= limit, "claimDeliveries returned more than its limit \(limit)")
                        mine += batch
                        await Task.yield()
                    }
                    Issue.record("\(name) still claimed events after 100 claims")
                    return (name, mine)
                }
            }
            var results: [(String, [ClaimedDelivery])] = []
            for try await result in group { results.append(result) }
            return results
        }
        let ids = perTask.flatMap { $0.1.map(\.delivery.id) }
        var seen: Set<String> = []
        let twice = ids.filter { !seen.insert($0).inserted }
        #expect(twice == [], "events claimed twice while leased")
        #expect(Set(ids) == Set(written))
        #expect(perTask.allSatisfy { name, items in items.allSatisfy { $0.dispatcher == name } })
        try await h.expectNothingClaimed("every event is leased")
    }

    // MARK: Recording

    static func recordDelivered(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("delivered")
        h.clock.advance(by: .seconds(2))
        let claimed = try await h.claimEvent(event.id)
        h.clock.advance(by: .seconds(1))
        let attempt = h.attempt(1, status: 200, latency: 87)
        #expect(try await h.handle(2).record(claimed, outcome: .delivered(attempt)))
        for index in h.stores.indices {
            let delivered = try await h.event(event.id, on: index)
            #expect(delivered.status == .delivered)
            #expect(delivered.attempts == 1)
            #expect(ms(delivered.deliveredAt) == h.clock.milliseconds, "deliveredAt is when it was recorded")
            #expect(delivered.lastStatusCode == 200)
            #expect(delivered.lastError == nil)
            #expect(delivered.log == [attempt])
            #expect(ms(delivered.createdAt) == ms(event.createdAt), "createdAt is kept")
            #expect(delivered.type == "job.completed")
        }
        h.clock.advance(by: .seconds(48 * 3600))
        try await h.expectNothingClaimed("a delivered event is never sent again (unless redelivered)")
    }

    static func recordRetry(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("retried")
        let first = try await h.claimEvent(event.id, as: "dispatcher-1")
        let attempt1 = h.attempt(1, status: 503, latency: 12, error: "HTTP 503", by: "dispatcher-1")
        #expect(try await h.store.record(first, outcome: .retry(attempt1, after: .seconds(10))))
        let waiting = try await h.event(event.id)
        #expect(waiting.status == .pending)
        #expect(waiting.attempts == 1)
        #expect(ms(waiting.nextAttemptAt) == h.clock.milliseconds + 10_000, "next attempt = now + delay")
        #expect(waiting.lastStatusCode == 503)
        #expect(waiting.lastError == "HTTP 503")
        #expect(waiting.deliveredAt == nil)
        #expect(waiting.log == [attempt1])

        try await h.expectNothingClaimed("10 s to wait")
        h.clock.advance(by: .milliseconds(9_999))
        try await h.expectNothingClaimed("1 ms before the next attempt")
        h.clock.advance(by: .milliseconds(1))
        let second = try await h.claimEvent(event.id, as: "dispatcher-2", on: 3)
        #expect(second.delivery.attempts == 1, "the claim tells how many attempts were made")
        #expect(second.payload == first.payload)
        let attempt2 = h.attempt(2, status: nil, latency: 15_000, error: "Timeout was reached", by: "dispatcher-2")
        #expect(try await h.handle(3).record(second, outcome: .retry(attempt2, after: .seconds(30))))
        let waitingAgain = try await h.event(event.id)
        #expect(waitingAgain.status == .pending)
        #expect(waitingAgain.attempts == 2)
        #expect(waitingAgain.lastStatusCode == nil, "no response: no status code")
        #expect(waitingAgain.lastError == "Timeout was reached")
        #expect(ms(waitingAgain.nextAttemptAt) == h.clock.milliseconds + 30_000)

        h.clock.advance(by: .seconds(30))
        let third = try await h.claimEvent(event.id, as: "dispatcher-3", on: 2)
        #expect(third.delivery.attempts == 2)
        h.clock.advance(by: .milliseconds(3))
        let attempt3 = h.attempt(3, status: 200, latency: 3, by: "dispatcher-3")
        #expect(try await h.handle(2).record(third, outcome: .delivered(attempt3)))
        let delivered = try await h.event(event.id, on: 1)
        #expect(delivered.status == .delivered)
        #expect(delivered.attempts == 3)
        #expect(delivered.lastStatusCode == 200)
        #expect(ms(delivered.deliveredAt) == h.clock.milliseconds)
        #expect(delivered.log == [attempt1, attempt2, attempt3], "every attempt, in order, with code, latency, error and dispatcher")
        let listed = try await h.events(delivered.jobID, on: 2)
        #expect(listed.first?.log == [attempt1, attempt2, attempt3], "deliveries(job:) has the log")
    }

    static func recordFailed(_ h: OutboxHarness) async throws {
        let (_, event) = try await h.completedEvent("failed")
        let claimed = try await h.claimEvent(event.id)
        h.clock.advance(by: .seconds(1))
        let attempt = h.attempt(1, status: nil, latency: 0, error: "webhook_forbidden: refused: hooks.example resolves to 10.0.0.1")
        #expect(try await h.handle(3).record(claimed, outcome: .failed(attempt)))
        let failed = try await h.event(event.id)
        #expect(failed.status == .failed)
        #expect(failed.attempts == 1)
        #expect(failed.deliveredAt == nil)
        #expect(failed.lastStatusCode == nil)
        #expect(failed.lastError == attempt.error)
        #expect(failed.log == [attempt])
        h.clock.advance(by: .seconds(48 * 3600))
        try await h.expectNothingClaimed("a failed event is not sent again (unless redelivered)")
        #expect(try await h.event(event.id).status == .failed)
    }

    // MARK: Listing and redelivery

    static func deliveriesListing(_ h: OutboxHarness) async throws {
        // e1: job 1 failed; e2: job 2 completed; e3: job 1 retried and completed; e4: job 3 completed.
        let job1 = try await h.submit("one")
        let job1Claim = try await h.claim(job1.id)
        #expect(try await h.store.fail(job1Claim.lease, error: finalError, retryDelay: .zero))
        let e1 = try #require(try await h.events(job1.id).first)
        h.clock.advance(by: .milliseconds(1))
        let (job2, e2) = try await h.completedEvent("two")
        h.clock.advance(by: .milliseconds(1))
        _ = try await h.store.retry(job1.id)
        let job1Again = try await h.claim(job1.id)
        #expect(try await h.store.complete(job1Again.lease, result: .object([:]), tracks: []))
        let e3 = try #require(try await h.events(job1.id).first)
        h.clock.advance(by: .milliseconds(1))
        let (_, e4) = try await h.completedEvent("three")
        // A job without a webhook.
        let plain = try await h.submit("plain", webhook: nil)
        let plainClaim = try await h.claim(plain.id)
        #expect(try await h.store.complete(plainClaim.lease, result: .object([:]), tracks: []))

        let names = [e1.id: "e1", e2.id: "e2", e3.id: "e3", e4.id: "e4"]
        func named(_ events: [WebhookDelivery]) -> [String] { events.map { names[$0.id] ?? $0.id } }
        #expect(Set(names.keys).count == 4)
        for index in h.stores.indices {
            let store = h.handle(index)
            #expect(named(try await store.deliveries(job: nil, limit: 100)) == ["e4", "e3", "e2", "e1"], "all, newest first (handle \(index))")
            #expect(named(try await store.deliveries(job: nil, limit: 2)) == ["e4", "e3"], "limit 2 (handle \(index))")
            #expect(named(try await store.deliveries(job: job1.id, limit: 100)) == ["e3", "e1"], "job 1's events, newest first (handle \(index))")
            #expect(named(try await store.deliveries(job: job1.id, limit: 1)) == ["e3"], "job 1's newest (handle \(index))")
            #expect(named(try await store.deliveries(job: job2.id, limit: 100)) == ["e2"], "job 2's (handle \(index))")
            #expect(named(try await store.deliveries(job: plain.id, limit: 100)) == [], "a job without a webhook has none")
            #expect(named(try await store.deliveries(job: JobID.make(at: h.clock.date), limit: 100)) == [], "an unknown job has none")
        }
        let listed = try await h.store.deliveries(job: nil, limit: 100)
        #expect(listed.map(\.type) == ["job.completed", "job.completed", "job.completed", "job.failed"])
        #expect(listed.map(\.jobID) == [e4.jobID, job1.id, job2.id, job1.id])
        #expect(listed.map { ms($0.createdAt)! } == listed.map { ms($0.createdAt)! }.sorted(by: >))
    }

    static func redeliver(_ h: OutboxHarness) async throws {
        // A delivered event.
        let (_, delivered) = try await h.completedEvent("delivered")
        let first = try await h.claimEvent(delivered.id)
        let attempt1 = h.attempt(1, status: 200)
        #expect(try await h.store.record(first, outcome: .delivered(attempt1)))
        h.clock.advance(by: .seconds(60))
        let again = try await h.handle(2).redeliver(delivered.id)
        #expect(again.id == delivered.id)
        #expect(again.status == .pending)
        #expect(ms(again.nextAttemptAt).map { $0 <= h.clock.milliseconds } == true, "due at once")
        #expect(again.attempts == 1, "the attempts made are kept")
        #expect(again.log == [attempt1], "the log is kept")
        let resent = try await h.claimEvent(delivered.id, as: "dispatcher-2", on: 3)
        #expect(resent.delivery.id == delivered.id, "the same webhook-id")
        #expect(resent.payload == first.payload, "the same bytes")
        let attempt2 = h.attempt(2, status: 204, by: "dispatcher-2")
        #expect(try await h.store.record(resent, outcome: .delivered(attempt2)))
        let redelivered = try await h.event(delivered.id)
        #expect(redelivered.status == .delivered)
        #expect(redelivered.attempts == 2)
        #expect(redelivered.log == [attempt1, attempt2])
        #expect(ms(redelivered.deliveredAt) == h.clock.milliseconds)

        // A failed event.
        let (_, failed) = try await h.completedEvent("failed")
        let failing = try await h.claimEvent(failed.id)
        #expect(try await h.store.record(failing, outcome: .failed(h.attempt(1, status: 410, error: "HTTP 410"))))
        try await h.expectNothingClaimed("failed")
        let back = try await h.handle(1).redeliver(failed.id)
        #expect(back.id == failed.id)
        #expect(back.status == .pending)
        #expect(try await h.event(failed.id, on: 3).status == .pending)
        let retried = try await h.claimEvent(failed.id, on: 2)
        #expect(retried.payload == failing.payload)

        // Unknown, and being delivered.
        await h.expectStoreError("redeliver of an unknown id", matching: { $0 == .notFound }) {
            try await h.store.redeliver("msg_doesnotexist")
        }
        await h.expectStoreError("redeliver of an event being delivered", matching: { if case .conflict = $0 { true } else { false } }) {
            try await h.store.redeliver(failed.id)
        }
        #expect(try await h.event(failed.id).status == .delivering, "the conflict changed nothing")
        #expect(try await h.store.record(retried, outcome: .delivered(h.attempt(2, status: 200))), "the dispatcher still holds its lease")
        #expect(try await h.event(failed.id).status == .delivered)
    }
}

extension JSONValue {
    var arrayCount: Int? { if case .array(let items) = self { items.count } else { nil } }
}
