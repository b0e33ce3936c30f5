import Foundation
import JobctlCore
import Queue
import Testing

/// The `JobStore` conformance suite: the queue semantics of docs/spec.md §4 and §5 and the doc comments
/// of `JobStore`, written once against `any JobStore` and run against every store (SQLite and
/// PostgreSQL).
///
/// A store's tests give a factory that opens several handles on one fresh, empty database, and
/// run each check as its own test case:
///
/// ```swift
/// @Test(arguments: JobStoreConformance.Check.allCases)
/// func conformance(_ check: JobStoreConformance.Check) async throws {
///     try await check.run { clock in
///         try (0..<4).map { _ in try SQLiteJobStore(path: path, clock: clock.now) }
///     }
/// }
/// ```
///
/// The checks report with `#expect` and `#require`, so they must run inside a Swift Testing test.
public enum JobStoreConformance {
    /// Opens handles on ONE fresh, empty database, every one of them reading the time from
    /// `clock`. Separate handles stand for separate worker processes (for SQLite: separate
    /// `SQLiteJobStore` instances on the same file). Give at least two; four is best (the
    /// contention check spreads eight claiming tasks over them).
    public typealias StoreFactory = @Sendable (_ clock: TestClock) async throws -> [any JobStore]

    /// One behaviour of a store, checked on its own fresh database.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Every field of a submitted job reads back as submitted; an unknown id reads as nil.
        case submitRoundTrip
        /// The same idempotency key returns the existing job (also when submitted concurrently);
        /// another key or none creates one.
        case idempotencyKey
        /// Higher priority first, then oldest; `limit`; a job waiting for its `runAt` is skipped.
        case claimOrder
        /// A job whose worker died competes with queued jobs by priority, then age, like any
        /// other: a higher-priority queued job is claimed before a lower-priority expired one.
        case expiredLeaseClaimOrder
        /// A claimed job is `reading`, attempt 1, has the worker and startedAt; distinct tokens.
        case claimResult
        /// 60 jobs, 8 concurrent claimers over every handle: each job claimed exactly once.
        case noDoubleClaimUnderContention
        /// A heartbeat extends the lease and records progress and tracks.
        case heartbeat
        /// An expired lease lets another worker claim the job, as attempt 2 with a new token.
        case leaseExpiryAndReclaim
        /// After a reclaim, the old lease can change nothing.
        case staleWorkerFencing
        /// `complete` stores the result and tracks; a second `complete` is refused.
        case complete
        /// A retryable failure goes back to `unknown` until `runAt = now + retryDelay`.
        case retryableFailureWithBackoff
        /// A non-retryable failure ends `failed` at once.
        case nonRetryableFailure
        /// Retryable failures on every attempt end `failed`.
        case attemptsExhausted
        /// An expired lease on the last attempt ends `failed` with `lease_lost`.
        case leaseExpiryWithNoAttemptsLeft
        /// `JobStateMachine.crashLimit` expired leases in a row fail a job with attempts left as
        /// `worker_crashed` (a poison job); a reported failure in between starts the count again;
        /// `retry` refuses a poison job, `retry(force: true)` runs it again.
        case poisonJob
        /// `cancel` in every status, and of an unknown id.
        case cancelInEveryStatus
        /// A running job whose worker died after a cancel request ends `cancelled`.
        case cancelOfRunningJobWhoseWorkerDied
        /// A cancel request is not lost when the worker releases the job or fails it retryably.
        case cancelRequestSurvivesHandBack
        /// `retry` of failed and cancelled jobs; every other status is a conflict.
        case retry
        /// `release` hands a job back without counting the attempt.
        case release
        /// `jobs(status:limit:)`: newest first, filtered, limited; `statusCounts()`.
        case list
        /// `jobs(_:)` by owner and by cursor: pages of one owner, newest first, each job exactly
        /// once while more jobs are submitted between pages; the owner reads back.
        case listPages
        /// `jobs(_:)` with the dashboard's conditions: each kind of test, negated, with LIKE's
        /// special characters taken literally, with a cursor; every store as the oracle says.
        case listConditions
        /// A queued job's place in line: claim order, due jobs only, counted up to a limit; a
        /// tenant's count is of its own jobs.
        case queuedAhead
        /// Attempts that ended a job badly: queued again, taken over, cancelled, failed; not
        /// a completion.
        case attemptHistory
        /// API keys: created, read back with their hash, listed oldest first, revoked once.
        case apiKeys
        /// The workers table: started (twice), heartbeat, stopped.
        case workers
        /// A fan-out (issue 27) creates every child or none, fenced; the parent waits without a
        /// lease; children are claimed ahead of later work.
        case fanOut
        /// The children's ends reach their parent; the join; a child's failure; the parent's
        /// retry and cancel over its children.
        case graphLifecycle
        /// Twenty children ending at once: each counted once, the join queued once.
        case graphConcurrentEnds
        /// A parent that ends without completing lists its completed children's outputs.
        case graphStoppedOutputs
        /// A job's role (standalone, parent with a plan, child with a part) read back as stored.
        case roles
        /// A waiting parent's progress is its children's, weighted by their ranges; a listing
        /// by parent returns exactly its children; children are claimed in index order.
        case graphProgress
        /// Every (parent state, child event) pair against `JobGraphStateMachine.next`.
        case graphChildEvents
        /// An upload recorded under a lease (issue 28): fenced, read back by the next attempt,
        /// kept through a retryable failure, listed once the job ends, cleared only if unchanged.
        case uploadRecords
        /// Every state a job can be in × every event, through the store's API, against
        /// `JobStateMachine.next`: the store's SQL implements exactly the machine's table,
        /// cancel-requested paths included.
        case transitionTable

        public var description: String { rawValue }

        /// Runs this check on a fresh database from `factory`.
        public func run(_ factory: StoreFactory) async throws {
            let harness = try await Harness.make(factory)
            switch self {
            case .submitRoundTrip: try await Checks.submitRoundTrip(harness)
            case .idempotencyKey: try await Checks.idempotencyKey(harness)
            case .claimOrder: try await Checks.claimOrder(harness)
            case .expiredLeaseClaimOrder: try await Checks.expiredLeaseClaimOrder(harness)
            case .claimResult: try await Checks.claimResult(harness)
            case .noDoubleClaimUnderContention: try await Checks.noDoubleClaimUnderContention(harness)
            case .heartbeat: try await Checks.heartbeat(harness)
            case .leaseExpiryAndReclaim: try await Checks.leaseExpiryAndReclaim(harness)
            case .staleWorkerFencing: try await Checks.staleWorkerFencing(harness)
            case .complete: try await Checks.complete(harness)
            case .retryableFailureWithBackoff: try await Checks.retryableFailureWithBackoff(harness)
            case .nonRetryableFailure: try await Checks.nonRetryableFailure(harness)
            case .attemptsExhausted: try await Checks.attemptsExhausted(harness)
            case .leaseExpiryWithNoAttemptsLeft: try await Checks.leaseExpiryWithNoAttemptsLeft(harness)
            case .poisonJob: try await Checks.poisonJob(harness)
            case .cancelInEveryStatus: try await Checks.cancelInEveryStatus(harness)
            case .cancelOfRunningJobWhoseWorkerDied: try await Checks.cancelOfRunningJobWhoseWorkerDied(harness)
            case .cancelRequestSurvivesHandBack: try await Checks.cancelRequestSurvivesHandBack(harness)
            case .retry: try await Checks.retry(harness)
            case .release: try await Checks.release(harness)
            case .list: try await Checks.list(harness)
            case .listPages: try await Checks.listPages(harness)
            case .listConditions: try await Checks.listConditions(harness)
            case .queuedAhead: try await Checks.queuedAhead(harness)
            case .attemptHistory: try await Checks.attemptHistory(harness)
            case .apiKeys: try await Checks.apiKeys(harness)
            case .workers: try await Checks.workers(harness)
            case .fanOut: try await Checks.fanOut(harness)
            case .graphLifecycle: try await Checks.graphLifecycle(harness)
            case .graphConcurrentEnds: try await Checks.graphConcurrentEnds(harness)
            case .graphStoppedOutputs: try await Checks.graphStoppedOutputs(harness)
            case .roles: try await Checks.roles(harness)
            case .graphProgress: try await Checks.graphProgress(harness)
            case .graphChildEvents: try await Checks.graphChildEvents(harness)
            case .uploadRecords: try await Checks.uploadRecords(harness)
            case .transitionTable: try await TransitionTable.check(harness)
            }
        }
    }
}

// MARK: - Harness

/// The handles on one database, its clock, and the helpers every check uses.
struct Harness: Sendable {
    let clock: TestClock
    let stores: [any JobStore]

    static func make(_ factory: JobStoreConformance.StoreFactory) async throws -> Harness {
        let clock = TestClock()
        return try await make(clock: clock, stores: try await factory(clock))
    }

    /// The harness on `stores`, migrated; they must be handles on an empty database.
    static func make(clock: TestClock, stores: [any JobStore]) async throws -> Harness {
        try #require(!stores.isEmpty, "the store factory returned no handle")
        for store in stores { try await store.migrate() }
        let existing = try await stores[0].jobs(status: nil, limit: 1000)
        try #require(
            existing.isEmpty,
            "the store factory must return handles on an empty database; it has \(existing.count) jobs"
        )
        return Harness(clock: clock, stores: stores)
    }

    /// The first handle.
    var store: any JobStore { stores[0] }

    /// Handle `index`, round robin: `handle(1)` is "another process" whenever there are two.
    func handle(_ index: Int) -> any JobStore { stores[index % stores.count] }

    static let workerA = WorkerIdentity(name: "worker-a", host: "host-a", pid: 101, version: "conformance")
    static let workerB = WorkerIdentity(name: "worker-b", host: "host-b", pid: 202, version: "conformance")

    /// A request whose input and output carry `name` (claims are compared by input).
    static func request(_ name: String, priority: Int = 0, maxAttempts: Int = 3, key: String? = nil) -> JobRequest {
        JobRequest(
            input: "/data/\(name).mov",
            output: "/out/\(name).mp4",
            preset: "low",
            presetSettings: .object(["name": .string("low")]),
            format: "mp4",
            priority: priority,
            maxAttempts: maxAttempts,
            idempotencyKey: key
        )
    }

    /// Submits a new job (it must be created, not found by key).
    @discardableResult
    func submit(
        _ name: String,
        priority: Int = 0,
        maxAttempts: Int = 3,
        key: String? = nil,
        on index: Int = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Job {
        let (job, created) = try await handle(index).submit(
            Harness.request(name, priority: priority, maxAttempts: maxAttempts, key: key)
        )
        try #require(
            created,
            "submit of \(name) found an existing job instead of creating one",
            sourceLocation: sourceLocation
        )
        return job
    }

    /// Claims one job, which must be `id` (the caller made it the only claimable one).
    func claim(
        _ id: JobID,
        as worker: WorkerIdentity = Harness.workerA,
        lease: Duration = .seconds(30),
        on index: Int = 1,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ClaimedJob {
        let claimed = try await handle(index).claim(as: worker, limit: 1, lease: lease)
        try #require(
            claimed.count == 1,
            "claim expected job \(id), got \(claimed.count) jobs",
            sourceLocation: sourceLocation
        )
        try #require(
            claimed[0].job.id == id,
            "claim expected job \(id), got \(claimed[0].job.input)",
            sourceLocation: sourceLocation
        )
        return claimed[0]
    }

    /// Claims with a generous limit and expects nothing.
    func expectNothingClaimed(
        _ why: Comment,
        as worker: WorkerIdentity = Harness.workerB,
        on index: Int = 2,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let claimed = try await handle(index).claim(as: worker, limit: 10, lease: .seconds(30))
        #expect(claimed.map(\.job.input) == [], why, sourceLocation: sourceLocation)
    }

    /// The job, which must exist.
    func fetch(_ id: JobID, on index: Int = 0, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Job {
        let job = try await handle(index).job(id)
        return try #require(job, "job \(id) is missing", sourceLocation: sourceLocation)
    }

    /// Expects `body` to throw a `JobStoreError` with `code` (and, for a conflict, `status`).
    func expectStoreError<T>(
        _ code: ErrorCode,
        status: JobStatus? = nil,
        _ what: Comment,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ body: () async throws -> T
    ) async {
        do {
            let value = try await body()
            Issue.record("\(what): expected JobStoreError \(code), got \(value)", sourceLocation: sourceLocation)
        } catch let error as JobStoreError {
            #expect(error.code == code, "\(what): \(error.message)", sourceLocation: sourceLocation)
            if let status {
                #expect(
                    error.status == status,
                    "\(what): conflict with \(String(describing: error.status))",
                    sourceLocation: sourceLocation
                )
            }
        } catch {
            Issue.record(
                "\(what): expected JobStoreError \(code), got \(type(of: error)): \(error)",
                sourceLocation: sourceLocation
            )
        }
    }
}

/// Times compared to the millisecond (stores keep milliseconds).
func ms(_ date: Date?) -> Int64? { date?.unixMilliseconds }
