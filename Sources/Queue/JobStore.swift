import Foundation
import JobctlCore

/// Who runs jobs: recorded with each claim and in the workers table.
public struct WorkerIdentity: Sendable, Hashable, Codable {
    public var name: String
    public var host: String
    public var pid: Int32
    public var version: String

    public init(name: String, host: String, pid: Int32, version: String) {
        self.name = name
        self.host = host
        self.pid = pid
        self.version = version
    }
}

/// A worker as the workers table knows it (`jobctl workers`).
public struct WorkerInfo: Sendable, Hashable, Codable {
    public var name: String
    public var host: String
    public var pid: Int32
    public var version: String
    public var startedAt: Date
    public var heartbeatAt: Date
    /// Set when it stopped cleanly; a worker that died keeps `nil` and an old heartbeat.
    public var stoppedAt: Date?
    /// The jobs it holds now (status `reading` under its name).
    public var runningJobs: [JobID]

    public init(
        name: String,
        host: String,
        pid: Int32,
        version: String,
        startedAt: Date,
        heartbeatAt: Date,
        stoppedAt: Date?,
        runningJobs: [JobID]
    ) {
        self.name = name
        self.host = host
        self.pid = pid
        self.version = version
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.stoppedAt = stoppedAt
        self.runningJobs = runningJobs
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(host, forKey: .host)
        try container.encode(pid, forKey: .pid)
        try container.encode(version, forKey: .version)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(heartbeatAt, forKey: .heartbeatAt)
        try container.encode(stoppedAt, forKey: .stoppedAt)
        try container.encode(runningJobs, forKey: .runningJobs)
    }
}

/// Proof that a worker holds a job's current attempt. Every write about a running job
/// presents it; a store accepts the write only while the job is still `reading` under this
/// token (fencing: a worker that lost its lease cannot touch the job).
public struct Lease: Sendable, Hashable, Codable {
    public var jobID: JobID
    public var token: String
    public var attempt: Int
    public var worker: String
    /// Whether the job has a webhook, so that its end writes an event to the outbox in the same
    /// transaction; `true` when not known. A store may end jobs without one more cheaply
    /// (PostgreSQL: a batch of completions in one statement, without a transaction around it).
    public var hasWebhook: Bool

    public init(jobID: JobID, token: String, attempt: Int, worker: String, hasWebhook: Bool = true) {
        self.jobID = jobID
        self.token = token
        self.attempt = attempt
        self.worker = worker
        self.hasWebhook = hasWebhook
    }
}

/// A job claimed by a worker, with the lease that lets it report.
public struct ClaimedJob: Sendable, Hashable {
    public var job: Job
    public var lease: Lease

    public init(job: Job, lease: Lease) {
        self.job = job
        self.lease = lease
    }
}

extension ClaimedJob {
    /// The order claims are served in, whatever the store returned them in: higher priority
    /// first, then older, then by id.
    public static func claimOrder(_ a: ClaimedJob, _ b: ClaimedJob) -> Bool { Job.claimOrder(a.job, b.job) }

    /// `jobs` in claim order. Sorts positions, not the jobs: a job is a large value, and
    /// moving each one several times showed in a busy worker's profile.
    public static func inClaimOrder(_ jobs: [ClaimedJob]) -> [ClaimedJob] {
        guard jobs.count > 1 else { return jobs }
        let keys = jobs.map { Job.ClaimKey($0.job) }
        return keys.indices.sorted { keys[$0] < keys[$1] }.map { jobs[$0] }
    }
}

extension Job {
    /// Higher priority first, then older, then by id: the order every store claims in.
    public static func claimOrder(_ a: Job, _ b: Job) -> Bool { ClaimKey(a) < ClaimKey(b) }

    /// What claim order compares, and only that.
    struct ClaimKey: Comparable {
        let priority: Int
        let createdAt: Date
        let id: JobID

        init(_ job: Job) { (priority, createdAt, id) = (job.priority, job.createdAt, job.id) }

        static func < (a: ClaimKey, b: ClaimKey) -> Bool {
            if a.priority != b.priority { return a.priority > b.priority }
            return (a.createdAt, a.id) < (b.createdAt, b.id)
        }
    }
}

/// What renewing a lease found.
public enum LeaseState: Sendable, Hashable {
    /// Still ours; `cancelRequested` when a user cancelled the job meanwhile.
    case held(cancelRequested: Bool)
    /// Someone else has the job now (or it ended): abandon the attempt, touch nothing.
    case lost
}

/// What `cancel` did.
public enum CancelOutcome: Sendable, Hashable {
    /// A queued job: cancelled at once.
    case cancelled(Job)
    /// A running job: its worker stops it within 2 s.
    case requested(Job)
}

/// The job table, whatever database holds it: SQLite (`QueueSQLite`) on one host, PostgreSQL
/// (`QueuePostgres`) for a fleet; both pass the same conformance suite (`QueueTestKit`).
///
/// The API is split by concern, as swift-jobs splits its drivers: `JobQueueDriver` is what a
/// worker needs to run jobs; `CancellableJobQueue`, `QueryableJobQueue` and `WorkerRegistry` are
/// capabilities on top. `JobStore` is all four, what the stores implement and the CLI uses; a
/// component asks only for what it calls (the worker: a driver and a registry; the gauges: a
/// queryable queue).
///
/// Times come from the store's clock (injectable in tests); leases are durations from "now".
public typealias JobStore = JobQueueDriver & CancellableJobQueue & QueryableJobQueue & WorkerRegistry

/// Submitting, claiming and running jobs: the transitions of `JobStateMachine` that a worker makes.
public protocol JobQueueDriver: Sendable {
    /// Creates or upgrades the schema (also done on first use).
    func migrate() async throws

    /// Inserts a job; with an idempotency key already used, returns that job instead
    /// (`created == false`).
    func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool)

    /// Claims up to `limit` jobs: queued jobs whose time has come, and running jobs whose lease
    /// expired (their worker is gone), together, highest priority first, then oldest. Atomic:
    /// two workers never get the same attempt.
    func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob]

    /// Extends the lease and records progress; tells whether the job was cancelled meanwhile,
    /// or that the lease was lost.
    func heartbeat(_ lease: Lease, progress: Double, tracks: [JobTrack], extendBy: Duration) async throws -> LeaseState

    /// The jobs among `leases` whose cancellation was requested (a cheap, frequent check).
    func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID>

    /// The attempt succeeded. `false`: the lease was lost and nothing was written.
    func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool

    /// The attempt failed. Retryable errors with attempts left go back to `unknown`, to be
    /// claimed again after `retryDelay` (or end `cancelled` if cancellation was requested);
    /// others end `failed`. `false`: the lease was lost.
    func fail(_ lease: Lease, error: JobError, retryDelay: Duration) async throws -> Bool

    /// The worker confirms it stopped a cancelled job. `false`: the lease was lost.
    func confirmCancelled(_ lease: Lease) async throws -> Bool

    /// The worker hands the job back unfinished (graceful shutdown); the attempt is not
    /// counted. A job whose cancellation was requested ends `cancelled` instead.
    /// `false`: the lease was lost.
    func release(_ lease: Lease) async throws -> Bool

    /// The attempt holding `lease` fans out into `children` (issue 27,
    /// `JobGraphStateMachine.Event.fanOut`): in one transaction, if the lease still holds and
    /// nobody asked the job to stop, the children are created (in order, `childIndex` 0…; each
    /// with the parent's owner and creation time, so they are claimed ahead of work submitted
    /// after the parent; no webhook: children are silent) and the parent lets go of its lease
    /// and waits, its attempt not counted. Returns the children's ids, or `nil` (nothing
    /// created) when the lease was lost. 1 to `JobGraphStateMachine.maximumChildren` children.
    func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]?

    func job(_ id: JobID) async throws -> Job?

    /// Records what the attempt holding `lease` has in flight at an object store (issue 28: a
    /// multipart upload, as JSON the worker writes and reads), so that the job's next attempt,
    /// on any worker, continues it instead of starting over; `nil` clears it. Fenced: `false`
    /// (nothing written) when the lease was lost. Never shown: not part of `Job`.
    func recordUpload(_ lease: Lease, _ state: String?) async throws -> Bool

    /// What the job's attempts recorded (`recordUpload`) and did not clear.
    func recordedUpload(of id: JobID) async throws -> String?

    /// Up to `limit` ended jobs (completed, failed, cancelled) whose record was never cleared:
    /// uploads their attempts left behind, for the worker's sweep to abort.
    func abandonedUploads(limit: Int) async throws -> [(id: JobID, state: String)]

    /// Clears the record of an ended job if it is still `state`: the sweep's claim on the
    /// uploads it names, before it aborts them. `false` (nothing cleared): the job was retried
    /// meanwhile, or its record changed, and its uploads are not the sweep's any more.
    func clearAbandonedUpload(of id: JobID, state: String) async throws -> Bool
}

/// What a user does to a job from outside: cancel it, run it again.
public protocol CancellableJobQueue: Sendable {
    /// Cancels a queued job at once, or asks the worker of a running one to stop. An ended job
    /// is a `conflict`.
    func cancel(_ id: JobID) async throws -> CancelOutcome

    /// Runs a failed or cancelled job again: the same id, `attempt` keeps counting, and the job
    /// gets its original number of attempts once more (`maxAttempts` becomes `attempt` plus the
    /// number it was submitted with). Other statuses are a `conflict`, and so is a poison job
    /// (`worker_crashed`) unless `force`.
    func retry(_ id: JobID, force: Bool) async throws -> Job
}

extension CancellableJobQueue {
    /// `retry(id, force: false)`.
    public func retry(_ id: JobID) async throws -> Job { try await retry(id, force: false) }
}

/// Listing and counting jobs (`jobctl list`, the queue gauges).
public protocol QueryableJobQueue: Sendable {
    /// The jobs `query` selects, newest first.
    func jobs(_ query: JobQuery) async throws -> [Job]

    /// How many jobs are in each status (statuses with none are absent), for metrics; only
    /// `owner`'s when not `nil` (a tenant's dashboard).
    func statusCounts(owner: String?) async throws -> [JobStatus: Int]

    /// One trivial statement (`SELECT 1`): whether the database answers, whatever the size of
    /// the job table (health checks).
    func ping() async throws

    /// How many queued jobs, due by `now`, come before `job` in claim order (higher priority,
    /// then older, then by id): 0 when it is next. Counted up to `limit` (the count stops there).
    /// With an `owner`, only that key's jobs are counted (a tenant must not learn the others'
    /// volume from its place in line).
    func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int

    /// When a running job's lease ends unless its worker's heartbeat renews it (then another
    /// worker may take the job over); `nil` for a job that is not running.
    func leaseExpiry(of job: JobID) async throws -> Date?

    /// The attempts of `job` that ended without completing it, oldest first (at most 100).
    func attempts(of job: JobID) async throws -> [JobAttempt]
}

extension QueryableJobQueue {
    /// Jobs, newest first.
    public func jobs(status: JobStatus?, limit: Int) async throws -> [Job] {
        try await jobs(JobQuery(status: status, limit: limit))
    }
}

/// The worker processes a queue has seen (`jobctl workers`).
public protocol WorkerRegistry: Sendable {
    /// Records a worker process (on start), its heartbeat, and its stop.
    func workerStarted(_ worker: WorkerIdentity) async throws
    /// Every worker ever started, most recent heartbeat first, with the jobs it runs now.
    func workers() async throws -> [WorkerInfo]
    func workerHeartbeat(_ worker: WorkerIdentity) async throws
    func workerStopped(_ worker: WorkerIdentity) async throws
}

/// A store that can tell idle workers that the job table changed (a job was submitted, a
/// cancellation requested), so they react at once instead of at their next poll. SQLite:
/// inotify on its write-ahead log; PostgreSQL: LISTEN/NOTIFY. Workers keep polling as well:
/// a notification may be missed, never waited for.
public protocol JobStoreChangeNotifying: JobStore {
    /// Yields after changes committed by any process (possibly more often); ends when the
    /// consuming task is cancelled.
    func changes() -> AsyncStream<Void>
    /// The changes of the kinds `wanted` asks for now (asked again at each notification): a
    /// busy worker wants cancellations only, an idle one new jobs too. While it wants none the
    /// store may stop watching. A store that cannot tell kinds apart reports `.any`.
    func changes(wanted: @escaping @Sendable () -> StoreChange) -> ChangeFeed
}

/// The queue: the jobs (`JobStore`) with their leases and graphs, its change feed, the webhook
/// outbox and the API keys. What a worker, a webhook dispatcher and the API need.
public typealias JobQueueDatabase = JobStore & JobStoreChangeNotifying & WebhookOutbox & APIKeyStore

/// What the dashboard keeps beside the queue: its sessions and audit trail, the servers'
/// shared secrets, the search index and the fleet's minutes (`DashboardStorageConformance`).
public typealias DashboardStorage = DashboardStore & FleetRecorder

/// Everything a job database is: the queue and the dashboard's storage. Every store (SQLite,
/// PostgreSQL, in memory) is all of it, so code that needs a capability asks for the narrowest
/// of these types and a store missing one fails to compile, instead of a cast that fails at
/// run time.
public typealias JobDatabase = JobQueueDatabase & DashboardStorage

extension QueryableJobQueue {
    /// How many jobs are in each status, everybody's.
    public func statusCounts() async throws -> [JobStatus: Int] { try await statusCounts(owner: nil) }
}
