import Foundation
import JobctlCore
import Queue
import Testing

// MARK: - Harness

/// The handles on one database, its clock, and the helpers every outbox check uses.
struct OutboxHarness: Sendable {
    let clock: TestClock
    let stores: [any WebhookOutbox]

    static func make(_ factory: WebhookOutboxConformance.StoreFactory) async throws -> OutboxHarness {
        let clock = TestClock()
        let stores = try await factory(clock)
        try #require(
            stores.count >= 2,
            "the outbox factory must return at least two handles; it returned \(stores.count)"
        )
        for store in stores { try await store.migrate() }
        let jobs = try await stores[0].jobs(status: nil, limit: 1000)
        try #require(
            jobs.isEmpty,
            "the outbox factory must return handles on an empty database; it has \(jobs.count) jobs"
        )
        let events = try await stores[0].deliveries(job: nil, limit: 1000)
        try #require(
            events.isEmpty,
            "the outbox factory must return handles on an empty database; it has \(events.count) events"
        )
        return OutboxHarness(clock: clock, stores: stores)
    }

    var store: any WebhookOutbox { stores[0] }
    func handle(_ index: Int) -> any WebhookOutbox { stores[index % stores.count] }

    static let worker = WorkerIdentity(name: "worker-a", host: "host-a", pid: 101, version: "conformance")
    static let hook = "https://hooks.example/jobctl?source=conformance"

    /// Submits a job with a webhook (unless `webhook` is nil).
    @discardableResult
    func submit(
        _ name: String,
        webhook: String? = OutboxHarness.hook,
        maxAttempts: Int = 3,
        on index: Int = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Job {
        let request = JobRequest(
            input: "/data/\(name).mov",
            output: "/out/\(name).mp4",
            preset: "low",
            format: "mp4",
            maxAttempts: maxAttempts,
            metadata: ["name": name],
            webhook: webhook
        )
        let (job, created) = try await handle(index).submit(request)
        try #require(created, "submit of \(name) found an existing job", sourceLocation: sourceLocation)
        return job
    }

    /// Claims one job, which must be `id` (the caller made it the only claimable one).
    func claim(
        _ id: JobID,
        lease: Duration = .seconds(30),
        on index: Int = 1,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ClaimedJob {
        let claimed = try await handle(index).claim(as: OutboxHarness.worker, limit: 1, lease: lease)
        try #require(
            claimed.map(\.job.id) == [id],
            "claim expected job \(id), got \(claimed.map(\.job.input))",
            sourceLocation: sourceLocation
        )
        return claimed[0]
    }

    /// Submits a job with a webhook and completes it: one `job.completed` event, returned.
    @discardableResult
    func completedEvent(
        _ name: String,
        webhook: String = OutboxHarness.hook,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (job: Job, event: WebhookDelivery) {
        let job = try await submit(name, webhook: webhook, sourceLocation: sourceLocation)
        let claimed = try await claim(job.id, sourceLocation: sourceLocation)
        let completed = try await handle(2).complete(
            claimed.lease,
            result: .object(["output": .string(job.output)]),
            tracks: []
        )
        try #require(completed, "complete of \(name)", sourceLocation: sourceLocation)
        let events = try await handle(3).deliveries(job: job.id, limit: 10)
        try #require(
            events.count == 1,
            "completing \(name) wrote \(events.count) events, expected 1",
            sourceLocation: sourceLocation
        )
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
        _ job: Job,
        _ types: [String],
        _ what: Comment,
        fresh: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let events = try await self.events(job.id, on: 1)
        #expect(
            events.reversed().map(\.type) == types,
            "\(what): events \(events.reversed().map(\.type))",
            sourceLocation: sourceLocation
        )
        guard fresh, let newest = events.first, events.count == types.count else { return }
        #expect(newest.jobID == job.id, "\(what)", sourceLocation: sourceLocation)
        #expect(
            newest.url == job.webhook,
            "\(what): the event is sent to the job's URL",
            sourceLocation: sourceLocation
        )
        #expect(newest.status == .pending, "\(what)", sourceLocation: sourceLocation)
        #expect(newest.attempts == 0, "\(what)", sourceLocation: sourceLocation)
        #expect(newest.log == [], "\(what)", sourceLocation: sourceLocation)
        #expect(newest.deliveredAt == nil, "\(what)", sourceLocation: sourceLocation)
        #expect(
            ms(newest.createdAt) == clock.milliseconds,
            "\(what): createdAt is the transition's time",
            sourceLocation: sourceLocation
        )
        #expect(ms(newest.nextAttemptAt) == clock.milliseconds, "\(what): due at once", sourceLocation: sourceLocation)
    }

    /// Claims events and expects exactly `ids`, in this order.
    @discardableResult
    func claimEvents(
        _ ids: [String],
        as dispatcher: String = "dispatcher-1",
        limit: Int = 10,
        lease: Duration = .seconds(60),
        on index: Int = 1,
        _ what: Comment,
        sourceLocation: SourceLocation = #_sourceLocation
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
        _ id: String,
        as dispatcher: String = "dispatcher-1",
        lease: Duration = .seconds(60),
        on index: Int = 1,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ClaimedDelivery {
        let claimed = try await handle(index).claimDeliveries(as: dispatcher, limit: 10, lease: lease)
        try #require(
            claimed.map(\.delivery.id) == [id],
            "expected to claim event \(id), got \(claimed.map(\.delivery.id))",
            sourceLocation: sourceLocation
        )
        return claimed[0]
    }

    func expectNothingClaimed(
        _ why: Comment,
        on index: Int = 2,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let claimed = try await handle(index).claimDeliveries(as: "dispatcher-x", limit: 100, lease: .seconds(60))
        #expect(claimed.map(\.delivery.id) == [], why, sourceLocation: sourceLocation)
    }

    /// The event by id (from the listing of every event).
    func event(
        _ id: String,
        on index: Int = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> WebhookDelivery {
        let all = try await handle(index).deliveries(job: nil, limit: 1000)
        return try #require(all.first { $0.id == id }, "event \(id) is missing", sourceLocation: sourceLocation)
    }

    /// An attempt at the clock's time.
    func attempt(
        _ number: Int,
        status: Int?,
        latency: Int = 42,
        error: String? = nil,
        by dispatcher: String = "dispatcher-1"
    ) -> DeliveryAttempt {
        DeliveryAttempt(
            attempt: number,
            at: clock.date,
            statusCode: status,
            latency: latency,
            error: error,
            dispatcher: dispatcher
        )
    }

    func expectStoreError<T>(
        _ what: Comment,
        _ code: ErrorCode,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> T
    ) async {
        do {
            let value = try await body()
            Issue.record("\(what): expected a JobStoreError, got \(value)", sourceLocation: sourceLocation)
        } catch let error as JobStoreError {
            #expect(
                error.code == code,
                "\(what): got \(error.code): \(error.message)",
                sourceLocation: sourceLocation
            )
        } catch {
            Issue.record(
                "\(what): expected a JobStoreError, got \(type(of: error)): \(error)",
                sourceLocation: sourceLocation
            )
        }
    }
}

extension JSONValue {
    var arrayCount: Int? { if case .array(let items) = self { items.count } else { nil } }
}
