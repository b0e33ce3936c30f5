import Foundation
import JobctlCore
import Logging
import Media
import Queue
import SafeHTTP
import ServiceLifecycle
import Synchronization

/// A worker process's service: claims jobs, runs them, reports back (docs/spec.md §5).
///
/// - Claims up to `concurrency` jobs; an idle worker looks again every `pollInterval`
///   (`ClaimLoop`, whose decisions are `ClaimLoopStateMachine`'s).
/// - Each running job renews its lease every `heartbeatInterval` (with progress and per-track
///   counters) and checks for cancellation every `cancellationCheckInterval`.
/// - How an attempt ends is decided by `AttemptStateMachine`; this file carries out its actions.
///   A job's output becomes visible only after the worker re-checks that it still holds the
///   lease; a worker that lost it abandons the attempt and touches nothing (fencing).
/// - On graceful shutdown (SIGTERM/SIGINT through the service group) it stops claiming, lets
///   running jobs finish for `drain`, then cancels them and hands them back (`unknown`) so
///   another worker resumes them, and returns.
public final class Worker: Service {
    public let identity: WorkerIdentity
    private let store: any JobStoreChangeNotifying
    private let options: WorkerOptions
    private let logger: Logger
    private let running = RunningJobs()
    /// Why the job database cannot be used at all (a damaged file), for /healthz; and the error
    /// that ends `--once`.
    private let databaseFault = DatabaseFault()
    /// Reads remote inputs' first byte and uploads remote outputs, under the address guard.
    private let sender: HTTPSender
    private let loop: ClaimLoop<JobClaimer>

    public init(
        store: any JobStoreChangeNotifying,
        options: WorkerOptions,
        identity: WorkerIdentity,
        logger: Logger
    ) {
        self.store = store
        self.options = options
        self.sender = HTTPSender(policy: options.addressPolicy)
        self.identity = identity
        var logger = logger
        logger[metadataKey: "worker"] = "\(identity.name)"
        self.logger = logger
        let attempts = Attempts(store: store, options: options, sender: sender, running: running, logger: logger)
        let claimer = JobClaimer(
            store: store,
            identity: identity,
            options: options,
            attempts: attempts,
            running: running,
            databaseFault: databaseFault,
            logger: logger
        )
        let configuration = ClaimLoopStateMachine.Configuration(
            concurrency: options.concurrency,
            drain: .stopClaiming(handBackAfter: options.drain),
            once: options.once
        )
        let changes: StoreChangeSource = { [store] wanted in store.changes(wanted: wanted) }
        loop = ClaimLoop(
            driver: claimer,
            configuration: configuration,
            pollInterval: options.pollInterval,
            changes: changes
        )
    }

    public func run() async throws {
        try await store.workerStarted(identity)
        logger.info(
            "Worker started",
            metadata: ["worker.concurrency": "\(options.concurrency)", "worker.lease": "\(options.lease)"]
        )
        // The staging directory, and the scratch directory of split exports' parts
        // (`PARENTID.split/`) when it is another directory (an `s3://` scratch has a lifecycle rule).
        let directories = [options.stagingDirectory, options.scratchDirectory].filter {
            !MediaLocation.isObjectStore($0)
        }
        let sweeps = Set(directories).sorted().map {
            StagingSweep(directory: $0, store: store, logger: logger)
        }
        let uploads = UploadSweep(store: store, clients: options.objectStore, logger: logger)
        for sweep in sweeps { await sweep.run() }
        await uploads.run()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(3600))
                        for sweep in sweeps { await sweep.run() }
                        await uploads.run()
                    }
                }
                await loop.run()
                group.cancelAll()
            }
        } onGracefulShutdown: { [self] in
            requestStop()
        }
        try? await store.workerStopped(identity)
        logger.info("Worker stopped")
        // `--once` on a damaged database ends at once, with the error (exit 1).
        if options.once, let fault = databaseFault.error { throw fault }
    }

    /// The damage that makes the job database unusable, if any (the health check reports it).
    public var databaseProblem: JobStoreError? { databaseFault.error }

    /// Asks the worker to stop as on SIGTERM (drain, then hand back).
    public func requestStop() { loop.stop() }

    /// Jobs running now, and whether the worker is draining (for the health endpoint).
    public var state: (running: Int, draining: Bool) { (running.count, loop.isStopping) }
}

/// The worker's side of the claim loop: claims jobs from the store, runs each as an attempt,
/// renews the worker's own heartbeat, and passes the store's change notifications on to running
/// jobs (a NOTIFY may be a cancellation: they check at once instead of at their next poll).
final class JobClaimer: ClaimLoopDriver {
    let store: any JobQueueDriver & WorkerRegistry
    let identity: WorkerIdentity
    let options: WorkerOptions
    let attempts: Attempts
    let running: RunningJobs
    let databaseFault: DatabaseFault
    let logger: Logger
    private let nextHeartbeat: Mutex<ContinuousClock.Instant>

    init(
        store: any JobQueueDriver & WorkerRegistry,
        identity: WorkerIdentity,
        options: WorkerOptions,
        attempts: Attempts,
        running: RunningJobs,
        databaseFault: DatabaseFault,
        logger: Logger
    ) {
        self.store = store
        self.identity = identity
        self.options = options
        self.attempts = attempts
        self.running = running
        self.databaseFault = databaseFault
        self.logger = logger
        nextHeartbeat = Mutex(.now + options.heartbeatInterval)
    }

    func claim(limit: Int) async throws -> [(ClaimedJob, ContinuousClock.Instant)] {
        // Leases count from before the request: the local deadline errs early.
        let requested = ContinuousClock.now
        let claimed = try await store.claim(as: identity, limit: limit, lease: options.lease)
        databaseFault.error = nil
        return claimed.map { ($0, requested) }
    }

    func run(_ item: (ClaimedJob, ContinuousClock.Instant), slot: ClaimSlot) async {
        await attempts.execute(item.0, leaseFrom: item.1, slot: slot)
    }

    func classify(_ error: any Error) -> ClaimLoopStateMachine.ClaimFailure {
        guard let error = error as? JobStoreError, error.code == .databaseCorrupt else { return .transient }
        databaseFault.error = error
        return .damaged
    }

    func observe(_ event: ClaimLoopEvent) {
        switch event {
        case .drainStarted(let count):
            logger.info(
                "Worker draining",
                metadata: ["worker.running": "\(count)", "worker.drain": "\(options.drain)"]
            )
        case .claimed:
            break
        case .claimFailed(let error as JobStoreError, .damaged, _):
            // Damage does not heal: say how to recover; `--once` ends here.
            logger.critical(
                "The job database is damaged",
                metadata: ["error.code": "\(error.code)", "error": "\(error.message)"]
            )
        case .claimFailed(let error, _, let retryIn):
            // The database is unreachable or busy beyond its timeout: back off, keep running jobs.
            logger.error("Claiming failed", metadata: ["error": "\(error)", "retry.in": "\(retryIn)"])
        }
    }

    func handBack() { running.handBackAll() }

    func wokeUp() async {
        let due = nextHeartbeat.withLock { next -> Bool in
            guard ContinuousClock.now >= next else { return false }
            next = .now + options.heartbeatInterval
            return true
        }
        if due { try? await store.workerHeartbeat(identity) }
    }

    var claimableChanges: StoreChange { .jobQueued }

    /// Running jobs may be cancelled.
    var wantedChanges: StoreChange { running.count > 0 ? .cancelRequested : [] }

    func storeChanged(_ kinds: StoreChange) async {
        guard kinds.contains(.cancelRequested) else { return }
        let leases = running.leases
        if !leases.isEmpty, let cancelled = try? await store.cancellationRequests(among: leases), !cancelled.isEmpty {
            running.stop(cancelled, reason: .cancelRequested)
        }
    }
}

/// Why the job database cannot be used at all (a damaged file), shared by the claim loop, the
/// health check and `--once`.
final class DatabaseFault: Sendable {
    private let fault = Mutex<JobStoreError?>(nil)

    var error: JobStoreError? {
        get { fault.withLock { $0 } }
        set { fault.withLock { $0 = newValue } }
    }
}
