import Foundation
import Synchronization

/// A job table and webhook outbox in this process's memory, for tests and embedding: the same
/// contract as the SQLite and PostgreSQL stores (it passes the same conformance suites,
/// `QueueTestKit`), with every status change decided by `JobStateMachine` itself. Nothing
/// survives the process: do not run a real queue on it.
///
/// Several "processes" share one queue by sharing one instance.
public final class MemoryJobStore: JobStore, JobStoreChangeNotifying, WebhookOutbox {
    private let clock: @Sendable () -> Date
    let state = Mutex(Tables())
    private let subscribers = Mutex<[UUID: AsyncStream<Void>.Continuation]>([:])
    let apiKeyTable = Mutex<[String: (key: APIKey, secretHash: String)]>([:])
    let dashboardTables = Mutex(DashboardTables())

    /// - Parameter clock: the store's notion of now (tests move it to expire leases).
    public init(clock: @escaping @Sendable () -> Date = { Date() }) {
        self.clock = clock
    }

    /// Now, to the millisecond, as the database stores keep times.
    var now: Date { Date(milliseconds: clock().milliseconds) }

    /// The tables, changed only under the lock.
    struct Tables {
        var jobs: [JobID: Record] = [:]
        var workers: [String: WorkerInfo] = [:]
        var deliveries: [String: StoredDelivery] = [:]
        var attempts: [JobID: [JobAttempt]] = [:]
    }

    /// A job row: the job as read back, and what only the store sees.
    struct Record {
        var job: Job
        var attemptBudget: Int
        var leaseToken: String?
        var leaseExpiresAt: Date?
        var crashes = 0
        var uploadState: String?

        var machineState: JobStateMachine.State {
            JobStateMachine.State(
                status: job.status,
                cancelRequested: job.cancelRequested,
                attempt: job.attempt,
                maxAttempts: job.maxAttempts,
                attemptBudget: attemptBudget,
                crashes: crashes
            )
        }

        /// Applies `event` through the state machine; `nil` when the machine refuses it.
        mutating func apply(_ event: JobEvent) -> JobStateMachine.State? {
            guard let next = JobStateMachine.next(machineState, on: event) else { return nil }
            job.status = next.status
            job.cancelRequested = next.cancelRequested
            job.attempt = next.attempt
            job.maxAttempts = next.maxAttempts
            crashes = next.crashes
            if next.status != .reading {
                leaseToken = nil
                leaseExpiresAt = nil
            }
            return next
        }

        func holds(_ lease: Lease) -> Bool { job.status == .reading && leaseToken == lease.token }
    }

    /// Runs `body` on the tables under the lock; tells subscribers when it wrote. Attempts it
    /// ended are noted as the SQL stores' trigger does (`noteEndedAttempts`).
    func write<T>(_ body: (inout Tables) throws -> T) rethrows -> T {
        let now = self.now
        let value = try state.withLock { tables in
            let running = tables.jobs.values.compactMap {
                $0.job.status == .reading && $0.leaseToken != nil ? $0.job : nil
            }
            defer { Self.noteEndedAttempts(running, &tables, now: now) }
            return try body(&tables)
        }
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield() }
        return value
    }

    func read<T>(_ body: (Tables) throws -> T) rethrows -> T {
        try state.withLock { try body($0) }
    }

    // MARK: JobQueueDriver

    public func migrate() async throws {}

    public func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        let now = self.now
        return write { tables in
            if let key = request.idempotencyKey,
                let existing = tables.jobs.values.first(where: { $0.job.idempotencyKey == key })
            {
                return (existing.job, false)
            }
            let job = MemoryJobStore.job(request, id: JobID.make(at: now), now: now)
            tables.jobs[job.id] = Record(job: job, attemptBudget: request.maxAttempts)
            return (job, true)
        }
    }

    public func job(_ id: JobID) async throws -> Job? {
        read { $0.jobs[id]?.job }
    }

    public func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        let now = self.now
        return write { tables in
            // Jobs whose worker vanished: those the machine ends (cancel requested, last
            // attempt) end now; the others compete with queued jobs.
            var expired: Set<JobID> = []
            for (id, record) in tables.jobs
            where record.job.status == .reading && record.leaseExpiresAt.map({ $0 <= now }) == true {
                guard let next = JobStateMachine.next(record.machineState, on: .leaseExpired) else { continue }
                if next.status == .unknown {
                    expired.insert(id)
                    continue
                }
                var ended = record
                _ = ended.apply(.leaseExpired)
                if ended.job.status == .failed {
                    ended.job.error = JobStoreError.leaseExpiryError(
                        poisoned: next.isPoisoned,
                        worker: record.job.worker,
                        attempt: record.job.attempt,
                        of: record.job.maxAttempts
                    )
                }
                ended.job.finishedAt = now
                tables.jobs[id] = ended
                MemoryJobStore.recorded(ended.job, &tables, now: now)
            }
            let candidates = tables.jobs.values
                .filter { expired.contains($0.job.id) || ($0.job.status == .unknown && $0.job.runAt <= now) }
                .map(\.job)
                .sorted(by: Job.claimOrder)
                .prefix(max(limit, 0))
            return candidates.map { candidate in
                var record = tables.jobs[candidate.id]!
                if expired.contains(candidate.id) { _ = record.apply(.leaseExpired) }
                _ = record.apply(.claim)
                record.leaseToken = MemoryJobStore.token()
                record.leaseExpiresAt = now.addingTimeInterval(Double(lease.milliseconds) / 1000)
                record.job.worker = worker.name
                record.job.progress = 0
                record.job.tracks = []
                record.job.startedAt = now
                record.job.finishedAt = nil
                tables.jobs[candidate.id] = record
                let lease = Lease(
                    jobID: candidate.id,
                    token: record.leaseToken!,
                    attempt: record.job.attempt,
                    worker: worker.name
                )
                return ClaimedJob(job: record.job, lease: lease)
            }
        }
    }

    public func heartbeat(
        _ lease: Lease,
        progress: Double,
        tracks: [JobTrack],
        extendBy: Duration
    ) async throws -> LeaseState {
        let now = self.now
        return write { tables in
            guard var record = tables.jobs[lease.jobID], record.holds(lease) else { return .lost }
            record.leaseExpiresAt = now.addingTimeInterval(Double(extendBy.milliseconds) / 1000)
            record.job.progress = max(record.job.progress, JobProgress.clamped(progress))
            record.job.tracks = tracks
            tables.jobs[lease.jobID] = record
            if let parent = record.job.parent { MemoryJobStore.refreshProgress(ofParent: parent, &tables) }
            return .held(cancelRequested: record.job.cancelRequested)
        }
    }

    public func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID> {
        read { tables in Set(leases.map(\.jobID).filter { tables.jobs[$0]?.job.cancelRequested == true }) }
    }

    public func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool {
        finish(lease, on: .complete) { job, _, _ in
            job.progress = 1
            job.result = result
            job.error = nil
            job.tracks = tracks
        }
    }

    public func fail(_ lease: Lease, error: JobError, retryDelay: Duration) async throws -> Bool {
        finish(lease, on: .fail(retryable: error.retryable)) { job, before, now in
            job.error = error
            if error.retryable && before.attemptsLeft {
                job.runAt = Date(milliseconds: now.milliseconds + retryDelay.milliseconds)
            }
        }
    }

    public func confirmCancelled(_ lease: Lease) async throws -> Bool {
        finish(lease, on: .confirmCancelled) { _, _, _ in }
    }

    public func release(_ lease: Lease) async throws -> Bool {
        finish(lease, on: .release) { job, _, now in
            job.runAt = now
            job.progress = 0
        }
    }

    /// Ends the attempt `lease` holds with `event`; `update` gets the state before the event and now.
    private func finish(
        _ lease: Lease,
        on event: JobEvent,
        update: (inout Job, JobStateMachine.State, Date) -> Void
    ) -> Bool {
        let now = self.now
        return write { tables in
            guard var record = tables.jobs[lease.jobID], record.holds(lease) else { return false }
            let before = record.machineState
            guard let next = record.apply(event) else { return false }
            record.job.finishedAt = next.status.isTerminal ? now : nil
            update(&record.job, before, now)
            tables.jobs[lease.jobID] = record
            MemoryJobStore.recorded(record.job, &tables, now: now)
            return true
        }
    }

    // MARK: CancellableJobQueue

    public func cancel(_ id: JobID) async throws -> CancelOutcome {
        let now = self.now
        return try write { tables in
            guard var record = tables.jobs[id] else { throw JobStoreError.noJob(id) }
            let status = record.job.status
            // A parent waiting for its children ends at once, and they are cancelled.
            if record.job.graphPhase == .waiting, status == .reading,
                let parent = MemoryJobStore.applyToParent(id, .job(.cancel), child: nil, &tables, now: now)
            {
                return .cancelled(parent)
            }
            guard let next = record.apply(.cancel) else {
                throw JobStoreError.alreadyEnded(id, status)
            }
            if next.status == .cancelled { record.job.finishedAt = now }
            tables.jobs[id] = record
            MemoryJobStore.recorded(record.job, &tables, now: now)
            return next.status == .cancelled ? .cancelled(record.job) : .requested(record.job)
        }
    }

    public func retry(_ id: JobID, force: Bool) async throws -> Job {
        let now = self.now
        return try write { tables in
            guard var record = tables.jobs[id] else { throw JobStoreError.noJob(id) }
            let status = record.job.status
            if let parent = record.job.parent { throw JobStoreError.childRetry(id, parent: parent) }
            // A parent whose children did not all complete: those run again.
            if record.job.graphPhase == .waiting, status.isTerminal {
                if let children = record.job.children, children.active > 0 { throw JobStoreError.childrenStopping(id) }
                guard
                    let parent = MemoryJobStore.applyToParent(
                        id,
                        .job(.retry(force: force)),
                        child: nil,
                        &tables,
                        now: now
                    )
                else {
                    if record.machineState.isPoisoned && status == .failed { throw JobStoreError.poisoned(id) }
                    throw JobStoreError.notRetryable(id, status)
                }
                return parent
            }
            guard record.apply(.retry(force: force)) != nil else {
                if record.machineState.isPoisoned && status == .failed { throw JobStoreError.poisoned(id) }
                throw JobStoreError.notRetryable(id, status)
            }
            record.job.runAt = now
            record.job.progress = 0
            record.job.result = nil
            record.job.error = nil
            record.job.finishedAt = nil
            tables.jobs[id] = record
            return record.job
        }
    }

    // MARK: QueryableJobQueue

    public func jobs(_ query: JobQuery) async throws -> [Job] {
        let ids = query.ids.map(Set.init)
        return read { tables in
            let selected = tables.jobs.values.map(\.job).filter { job in
                (ids?.contains(job.id) ?? true) && (query.status == nil || job.status == query.status)
                    && (query.owner == nil || job.owner == query.owner)
                    && (query.parent == nil || job.parent == query.parent)
                    && (!query.topLevelOnly || job.parent == nil)
                    && query.conditions.allSatisfy { $0.matches(job) }
                    && query.after.map {
                        (job.createdAt.milliseconds, job.id.rawValue) < ($0.createdAt, $0.id.rawValue)
                    }
                        ?? true
            }
            // In whole milliseconds, as the cursor and the other stores order them.
            return MemoryJobStore.newestFirst(selected, limit: query.limit) {
                (Date(milliseconds: $0.createdAt.milliseconds), $0.id.rawValue)
            }
        }
    }

    public func ping() async throws {}

    public func statusCounts(owner: String?) async throws -> [JobStatus: Int] {
        read { tables in
            tables.jobs.values.filter { owner == nil || $0.job.owner == owner }
                .reduce(into: [:]) { counts, record in counts[record.job.status, default: 0] += 1 }
        }
    }

    // MARK: WorkerRegistry

    public func workerStarted(_ worker: WorkerIdentity) async throws {
        let now = self.now
        write { tables in
            tables.workers[worker.name] = WorkerInfo(
                name: worker.name,
                host: worker.host,
                pid: worker.pid,
                version: worker.version,
                startedAt: now,
                heartbeatAt: now,
                stoppedAt: nil,
                runningJobs: []
            )
        }
    }

    public func workerHeartbeat(_ worker: WorkerIdentity) async throws {
        let now = self.now
        write { tables in tables.workers[worker.name]?.heartbeatAt = now }
    }

    public func workerStopped(_ worker: WorkerIdentity) async throws {
        let now = self.now
        write { tables in
            tables.workers[worker.name]?.stoppedAt = now
            tables.workers[worker.name]?.heartbeatAt = now
        }
    }

    public func workers() async throws -> [WorkerInfo] {
        read { tables in
            let running = tables.jobs.values.map(\.job).filter { $0.status == .reading }
                .sorted { ($0.startedAt ?? .distantPast) < ($1.startedAt ?? .distantPast) }
            return tables.workers.values
                .map { worker in
                    var worker = worker
                    worker.runningJobs = running.filter { $0.worker == worker.name }.map(\.id)
                    return worker
                }
                .sorted { ($0.heartbeatAt, $1.name) > ($1.heartbeatAt, $0.name) }
        }
    }

    // MARK: JobStoreChangeNotifying

    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    /// Every write is `.any` (the tables are not told apart), reported while anything is wanted.
    public func changes(wanted: @escaping @Sendable () -> StoreChange) -> ChangeFeed {
        let forwarding = Mutex<Task<Void, Never>?>(nil)
        let feed = ChangeFeed { forwarding.withLock { $0?.cancel() } }
        let stream = changes()
        forwarding.withLock { task in
            task = Task {
                for await _ in stream where !wanted().isEmpty { feed.send(.any) }
                feed.finish()
            }
        }
        return feed
    }
}
