import Foundation
import Logging
import Media
import Metrics
import Queue
import ServiceLifecycle
import Synchronization
import Webhooks

/// A worker process's service: claims jobs, runs them, reports back (docs/spec.md §5).
///
/// - Claims up to `concurrency` jobs; an idle worker looks again every `pollInterval`.
/// - Each running job renews its lease every lease/3 (with progress and per-track counters)
///   and checks for cancellation every `cancellationCheckInterval`.
/// - A job's output becomes visible only after the worker re-checks that it still holds the
///   lease; a worker that lost it abandons the attempt and touches nothing (fencing).
/// - On graceful shutdown (SIGTERM/SIGINT through the service group) it stops claiming, lets
///   running jobs finish for `drain`, then cancels them and hands them back (`unknown`) so
///   another worker resumes them, and returns.
public final class Worker: Service {
    public let identity: WorkerIdentity
    private let store: any JobStore
    private let options: WorkerOptions
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let running = RunningJobs()
    /// Why the job database cannot be used at all (a damaged file), for /healthz; and the error
    /// that ends `--once`.
    private let databaseFault = Mutex<JobStoreError?>(nil)
    /// Reads remote inputs' first byte and uploads remote outputs, under the address guard.
    private let sender: HTTPSender

    public init(store: any JobStore, options: WorkerOptions, identity: WorkerIdentity, logger: Logger) {
        self.store = store
        self.options = options
        self.sender = HTTPSender(policy: options.addressPolicy)
        self.identity = identity
        var logger = logger
        logger[metadataKey: "worker"] = "\(identity.name)"
        self.logger = logger
    }

    public func run() async throws {
        try await store.workerStarted(identity)
        logger.info("Worker started", metadata: ["worker.concurrency": "\(options.concurrency)", "worker.lease": "\(options.lease)"])
        await stagingSweep.run()
        await withGracefulShutdownHandler {
            await claimLoop()
        } onGracefulShutdown: { [self] in
            requestStop()
        }
        try? await store.workerStopped(identity)
        logger.info("Worker stopped")
        // `--once` on a damaged database ends at once, with the error (exit 1).
        if options.once, let fault = databaseFault.withLock({ $0 }) { throw fault }
    }

    /// The damage that makes the job database unusable, if any (the health check reports it).
    public var databaseProblem: JobStoreError? { databaseFault.withLock { $0 } }

    private var stagingSweep: StagingSweep {
        StagingSweep(directory: options.stagingDirectory, store: store, logger: logger)
    }

    /// Asks the worker to stop as on SIGTERM (drain, then hand back).
    public func requestStop() { stopping.store(true, ordering: .releasing) }

    /// Wakes the claim loop: a job finished, or the idle poll interval passed. Wake-ups
    /// coalesce, and finished jobs are counted, so a burst of N completions is one wake-up and
    /// one claim of N slots.
    private final class Signals: Sendable {
        private let finished = Atomic<Int>(0)
        let wakeUps: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation

        init() {
            (wakeUps, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        }

        func jobFinished() {
            finished.add(1, ordering: .relaxed)
            continuation.yield()
        }

        func wake() { continuation.yield() }

        /// Jobs finished since the last call.
        func takeFinished() -> Int { finished.exchange(0, ordering: .relaxed) }

        /// Whether the worker could take another job (kept up to date by the loop).
        private let freeSlots = Atomic<Bool>(true)
        var hasFreeSlots: Bool { freeSlots.load(ordering: .relaxed) }
        func setFreeSlots(_ free: Bool) { freeSlots.store(free, ordering: .relaxed) }
    }

    /// Jobs running now, and whether the worker is draining (for the health endpoint).
    public var state: (running: Int, draining: Bool) { (running.count, stopping.load(ordering: .relaxed)) }

    private func claimLoop() async {
        let running = self.running
        let signals = Signals()
        await withDiscardingTaskGroup { group in
            group.addTask { [pollInterval = options.pollInterval] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: pollInterval)
                    signals.wake()
                }
            }
            group.addTask { [stagingSweep] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(3600))
                    await stagingSweep.run()
                }
            }
            // A store that notices changes (a submit, a cancel) wakes the loop at once when a slot is
            // free, at most every 2 ms: busy workers' own commits must not keep each other awake.
            // A change may also be a cancellation (PostgreSQL NOTIFY): running jobs check at once
            // instead of at their next poll.
            if let notifying = store as? any JobStoreChangeNotifying {
                group.addTask { [store] in
                    for await _ in notifying.changes() {
                        let leases = running.leases
                        if !leases.isEmpty, let cancelled = try? await store.cancellationRequests(among: leases), !cancelled.isEmpty {
                            running.stop(cancelled, reason: .cancelRequested)
                        }
                        if signals.hasFreeSlots { signals.wake() }
                        try? await Task.sleep(for: .milliseconds(2))
                    }
                }
            }
            var wakeUps = signals.wakeUps.makeAsyncIterator()
            var busy = 0
            var drainDeadline: ContinuousClock.Instant?
            var nextWorkerHeartbeat = ContinuousClock.now + options.heartbeatInterval
            var claimBackoff = Duration.zero
            var claimAgainAt = ContinuousClock.now

            while true {
                busy -= signals.takeFinished()
                if stopping.load(ordering: .acquiring) {
                    if drainDeadline == nil {
                        drainDeadline = .now + options.drain
                        logger.info("Worker draining", metadata: ["worker.running": "\(busy)", "worker.drain": "\(options.drain)"])
                    }
                    if busy == 0 { break }
                    if let deadline = drainDeadline, ContinuousClock.now >= deadline { running.handBackAll() }
                } else if busy < options.concurrency && ContinuousClock.now >= claimAgainAt {
                    do {
                        // Leases count from before the request: the local deadline errs early.
                        let requested = ContinuousClock.now
                        let claimed = try await store.claim(as: identity, limit: options.concurrency - busy, lease: options.lease)
                        claimBackoff = .zero
                        databaseFault.withLock { $0 = nil }
                        for job in claimed {
                            busy += 1
                            group.addTask { [self] in
                                await execute(job, leaseFrom: requested, running: running)
                                signals.jobFinished()
                            }
                        }
                        if claimed.isEmpty && busy == 0 && options.once { break }
                    } catch let error as JobStoreError where error.kind == .corrupt {
                        // Damage does not heal: say how to recover; `--once` ends here.
                        databaseFault.withLock { $0 = error }
                        logger.critical("The job database is damaged", metadata: ["error.code": "\(error.code)", "error": "\(error.message)"])
                        if options.once { break }
                        claimBackoff = .seconds(10)
                        claimAgainAt = .now + claimBackoff
                    } catch {
                        // The database is unreachable or busy beyond its timeout: back off, keep running jobs.
                        claimBackoff = min(max(claimBackoff * 2, .milliseconds(500)), .seconds(10))
                        claimAgainAt = .now + claimBackoff
                        logger.error("Claiming failed", metadata: ["error": "\(error)", "retry.in": "\(claimBackoff)"])
                    }
                }
                if ContinuousClock.now >= nextWorkerHeartbeat {
                    nextWorkerHeartbeat = .now + options.heartbeatInterval
                    try? await store.workerHeartbeat(identity)
                }
                signals.setFreeSlots(busy < options.concurrency && drainDeadline == nil)
                guard await wakeUps.next() != nil else { break }
            }
            group.cancelAll()
        }
    }

    // MARK: Running one job

    private func execute(_ claimed: ClaimedJob, leaseFrom requested: ContinuousClock.Instant, running: RunningJobs) async {
        let logger = jobLogger(claimed)
        if claimed.job.kind == .noop {
            do {
                if try await store.complete(claimed.lease, result: .object([:]), tracks: []) { Counter(label: "jobctl_job_attempts_total", dimensions: [("outcome", "completed")]).increment() }
            } catch {
                logger.error("Reporting the outcome failed; the job will be claimed again after its lease", metadata: ["error": "\(error)"])
            }
            return
        }
        logger.info("Job claimed", metadata: ["job.input": "\(claimed.job.displayInput)", "job.preset": "\(claimed.job.preset)"])
        WorkerMetrics.claimed(runAt: claimed.job.runAt)
        let execution = Execution(claimed, lease: options.lease, renewedAt: requested)
        running.add(execution)
        defer { running.remove(execution) }

        await withTaskGroup(of: Void.self) { group in
            // From the claim to the last report: opening a remote input and uploading an output
            // can take a while, and the lease must hold (and cancellation reach us) throughout.
            group.addTask { [self] in await monitor(execution, logger: logger) }
            let outcome: Result<(ExportResult, PendingOutput), any Error>
            do {
                let export = try await ExportJob.prepare(claimed.job, lease: claimed.lease, options: options, sender: sender)
                execution.attach(export)
                let started = ContinuousClock.now
                let exported = try await export.session.exportDeferringCommit()
                WorkerMetrics.encoded(mediaSeconds: exported.0.duration, in: .now - started)
                outcome = .success(exported)
            } catch {
                outcome = .failure(error)
            }
            await settle(execution, outcome: outcome, logger: logger)
            group.cancelAll()
        }
    }

    private func jobLogger(_ claimed: ClaimedJob) -> Logger {
        var logger = self.logger
        logger[metadataKey: "job.id"] = "\(claimed.job.id)"
        logger[metadataKey: "job.attempt"] = "\(claimed.lease.attempt)"
        return logger
    }

    /// While a job runs: renew its lease (with progress) every `heartbeatInterval`, and look for
    /// a cancellation request every `cancellationCheckInterval` (notifications, when the store
    /// has them, also stop it at once: see `claimLoop`). Quiet once the outcome is being reported.
    private func monitor(_ execution: Execution, logger: Logger) async {
        let lease = execution.claimed.lease
        var nextHeartbeat = ContinuousClock.now + options.heartbeatInterval
        var nextCancellationCheck = ContinuousClock.now + options.cancellationCheckInterval
        while !Task.isCancelled && !execution.isReporting {
            try? await Task.sleep(until: min(nextHeartbeat, nextCancellationCheck))
            guard !Task.isCancelled && !execution.isReporting else { return }
            do {
                if ContinuousClock.now >= nextHeartbeat {
                    nextHeartbeat = .now + options.heartbeatInterval
                    nextCancellationCheck = .now + options.cancellationCheckInterval
                    let export = execution.export
                    let sent = ContinuousClock.now
                    let state = try await store.heartbeat(
                        lease, progress: export?.session.progress ?? 0, tracks: export?.tracks ?? [], extendBy: options.lease
                    )
                    guard !execution.isReporting else { return }
                    switch state {
                    case .lost:
                        logger.warning("Lease lost: abandoning the attempt")
                        execution.stop(.leaseLost)
                    case .held(let cancelRequested):
                        execution.renewed(at: sent)
                        if cancelRequested { execution.stop(.cancelRequested) }
                    }
                } else if ContinuousClock.now >= nextCancellationCheck {
                    nextCancellationCheck = .now + options.cancellationCheckInterval
                    if try await store.cancellationRequests(among: [lease]).contains(lease.jobID) { execution.stop(.cancelRequested) }
                }
            } catch {
                logger.warning("Renewing the lease failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Reports how an attempt ended; exactly one store call per attempt (or none when fenced).
    /// A local output is renamed into place, a remote one uploaded, only after the lease is
    /// checked again (fencing).
    private func settle(_ execution: Execution, outcome: Result<(ExportResult, PendingOutput), any Error>, logger: Logger) async {
        let lease = execution.claimed.lease
        let export = execution.export
        do {
            switch outcome {
            case .success(let (exported, pending)):
                var result = exported
                let tracks = export?.tracks ?? []
                if let uploadURL = export?.uploadURL {
                    do {
                        result.bytes = try await upload(pending, to: uploadURL, format: export?.session.format ?? .mp4, execution: execution, tracks: tracks, logger: logger)
                        WorkerMetrics.uploaded(bytes: result.bytes)
                        result.output = JobRequest.displayURL(uploadURL)
                    } catch {
                        pending.discard()
                        await settle(execution, outcome: .failure(error), logger: logger)
                        return
                    }
                    pending.discard()
                } else {
                    Failpoints.hit("before-rename", logger: logger)
                    // Fenced: only the lease's holder renames, checked against the store just
                    // before (and against the local deadline, in case this thread was frozen).
                    guard await fence(execution, tracks: tracks, logger: logger) else {
                        pending.discard()
                        logger.warning(execution.stopReason == .leaseLost ? "Lease lost before committing: output discarded" : "Lease renewed too late to commit: output discarded, job handed back")
                        await settle(execution, outcome: .failure(MediaError.cancelled()), logger: logger)
                        return
                    }
                    if execution.stopReason == .cancelRequested {
                        pending.discard()
                        await settle(execution, outcome: .failure(MediaError.cancelled()), logger: logger)
                        return
                    }
                    do {
                        try pending.commit()
                    } catch {
                        await settle(execution, outcome: .failure(error), logger: logger)
                        return
                    }
                }
                execution.beginReporting()
                if try await store.complete(lease, result: ExportJob.json(result), tracks: tracks) {
                    logger.info("Job completed", metadata: ["job.output": "\(result.output)", "job.bytes": "\(result.bytes)"])
                    execution.ended(.completed)
                } else {
                    logger.warning("Lease lost while completing; the next attempt will replace the output")
                    execution.ended(.leaseLost)
                }
            case .failure(let error as MediaError) where error.isCancellation:
                execution.beginReporting()
                switch execution.stopReason {
                case .cancelRequested:
                    _ = try await store.confirmCancelled(lease)
                    logger.info("Job cancelled")
                    execution.ended(.cancelled)
                case .leaseLost:
                    execution.ended(.leaseLost)
                case .handBack, nil:
                    _ = try await store.release(lease)
                    logger.info("Job handed back")
                    execution.ended(.handedBack)
                }
            case .failure(let error as MediaError):
                execution.beginReporting()
                try await fail(execution, error: JobError(code: error.code.rawValue, message: error.message, retryable: error.transient ? true : nil), logger: logger)
            case .failure(let failure as JobFailure):
                execution.beginReporting()
                try await fail(execution, error: failure.error, logger: logger)
            case .failure(let error):
                execution.beginReporting()
                try await fail(execution, error: JobError(code: "internal", message: "\(error)"), logger: logger)
            }
        } catch {
            // The store is unreachable: the lease will expire and the job will run again.
            logger.error("Reporting the outcome failed; the job will be claimed again after its lease", metadata: ["error": "\(error)"])
        }
    }

    /// Checks against the store, just before an output becomes visible (a rename, each PUT),
    /// that this worker still holds the attempt, and renews the lease. `true`: go ahead. `false`:
    /// the attempt is stopped — `leaseLost` when the store says so, or when the store did not
    /// answer before the lease's local deadline (nothing may be shown on its strength; the lease
    /// will expire and the job run again), `handBack` when the answer came too late to trust
    /// (the worker then releases the job rather than let it wait out its lease). A store error
    /// is retried meanwhile: a database blip never costs an attempt. A cancellation requested
    /// meanwhile stops the attempt too.
    private func fence(_ execution: Execution, tracks: [JobTrack], logger: Logger) async -> Bool {
        while true {
            let sent = ContinuousClock.now
            do {
                switch try await store.heartbeat(execution.claimed.lease, progress: 1, tracks: tracks, extendBy: options.lease) {
                case .lost:
                    execution.stop(.leaseLost)
                    return false
                case .held(let cancelRequested):
                    execution.renewed(at: sent)
                    if cancelRequested { execution.stop(.cancelRequested) }
                    guard !execution.leaseMayBeLost else {
                        execution.stop(.handBack)
                        return false
                    }
                    return execution.stopReason != .leaseLost
                }
            } catch {
                guard !execution.leaseMayBeLost else {
                    logger.warning("The job database did not answer before the lease's deadline", metadata: ["error": "\(error)"])
                    execution.stop(.leaseLost)
                    return false
                }
                logger.warning("Checking the lease failed; trying again", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// PUTs a finished output, retrying within the attempt. Every PUT is preceded by a fenced
    /// check against the store, and runs on a thread of its own that stops sending within a
    /// second of the attempt being stopped — cancelled, the lease found lost, or the lease's
    /// local deadline passed without a renewal (a worker frozen mid-upload).
    private func upload(_ pending: PendingOutput, to url: String, format: ContainerFormat, execution: Execution, tracks: [JobTrack], logger: Logger) async throws -> Int64 {
        let (sender, delays, lease) = (sender, options.uploadRetryDelays, execution.claimed.lease)
        let file = pending.temporaryPath
        logger.info("Uploading the output", metadata: ["job.output": "\(JobRequest.displayURL(url))"])
        var tries = 0
        while true {
            Failpoints.hit("before-upload", logger: logger)
            guard await fence(execution, tracks: tracks, logger: logger), execution.stopReason == nil else {
                if execution.stopReason != .cancelRequested { logger.warning("Lease lost before uploading: output discarded") }
                throw MediaError.cancelled()
            }
            let response = try await onDedicatedThread("jobctl.upload") {
                RemoteMedia.put(file, to: url, contentType: RemoteMedia.contentType(of: format), attempt: lease, sender: sender) {
                    execution.shouldStopTransfer
                }
            }
            switch RemoteMedia.outcome(of: response, url: url, tries: tries, retryDelays: delays) {
            case .uploaded(let bytes):
                return bytes
            case .failed(let failure):
                throw failure
            case .stopped:
                if execution.stopReason == .leaseLost { logger.warning("Lease lost during the upload: transfer stopped") }
                throw MediaError.cancelled()
            case .retry(let delay, let what):
                logger.warning("Upload failed; retrying", metadata: ["error": "\(what)", "retry.in": "\(delay)"])
                tries += 1
                let deadline = ContinuousClock.now + delay
                while ContinuousClock.now < deadline {
                    if execution.shouldStopTransfer { throw MediaError.cancelled() }
                    try? await Task.sleep(for: min(.milliseconds(100), deadline - .now))
                }
            }
        }
    }

    private func fail(_ execution: Execution, error: JobError, logger: Logger) async throws {
        let lease = execution.claimed.lease
        let delay = options.retryPolicy.delay(afterAttempt: lease.attempt)
        guard try await store.fail(lease, error: error, retryDelay: delay) else {
            execution.ended(.leaseLost)
            return
        }
        execution.ended(error.retryable && lease.attempt < execution.claimed.job.maxAttempts ? .retried : .failed)
        logger.warning("Job failed", metadata: ["error.code": "\(error.code)", "error.message": "\(error.message)", "error.retryable": "\(error.retryable)"])
    }
}

/// Why a running job was stopped before it finished.
enum StopReason: Sendable {
    case cancelRequested
    case leaseLost
    /// Graceful shutdown ran out of drain time: hand the job back.
    case handBack
}

/// One running attempt: its export (once prepared), why it was stopped, if it was, and whether
/// its outcome is being reported (then the monitor stays quiet).
final class Execution: Sendable {
    let claimed: ClaimedJob
    let claimedAt = ContinuousClock.now
    let lease: Duration
    private let state = Mutex<(export: ExportJob?, reason: StopReason?, reporting: Bool)>((nil, nil, false))
    /// When the lease may have expired, by this host's clock: a renewal's request time plus the
    /// lease, less a margin. The store decides expiry by its own clock, which starts counting
    /// after the request was sent, so this errs early.
    private let deadline: Mutex<ContinuousClock.Instant>

    init(_ claimed: ClaimedJob, lease: Duration, renewedAt: ContinuousClock.Instant) {
        self.claimed = claimed
        self.lease = lease
        deadline = Mutex(renewedAt + lease - Execution.margin(lease))
    }

    private static func margin(_ lease: Duration) -> Duration { min(lease / 10, .seconds(1)) }

    /// A renewal sent at `sent` succeeded.
    func renewed(at sent: ContinuousClock.Instant) {
        deadline.withLock { $0 = max($0, sent + lease - Execution.margin(lease)) }
    }

    /// Whether the lease may have expired without a renewal (this process was frozen, or the
    /// store has not answered): nothing may be made visible on its strength any more.
    var leaseMayBeLost: Bool { ContinuousClock.now >= deadline.withLock { $0 } }

    /// What a transfer asks before each chunk: stop if the attempt was stopped, or if the lease
    /// may be lost (which stops the attempt).
    var shouldStopTransfer: Bool {
        if leaseMayBeLost { stop(.leaseLost) }
        return stopReason != nil
    }

    /// Counts the attempt's outcome and its duration since the claim.
    func ended(_ outcome: WorkerMetrics.Outcome) {
        WorkerMetrics.attemptEnded(outcome, after: .now - claimedAt)
    }

    var stopReason: StopReason? { state.withLock { $0.reason } }
    var export: ExportJob? { state.withLock { $0.export } }
    var isReporting: Bool { state.withLock { $0.reporting } }

    func attach(_ export: ExportJob) {
        let stopped = state.withLock { state -> Bool in
            state.export = export
            return state.reason != nil
        }
        if stopped { export.session.cancel() }
    }

    func beginReporting() { state.withLock { $0.reporting = true } }

    /// Stops the attempt (the first reason wins).
    func stop(_ reason: StopReason) {
        let export = state.withLock { state -> ExportJob? in
            if state.reason == nil { state.reason = reason }
            return state.export
        }
        export?.session.cancel()
    }
}

/// The attempts this worker is running.
final class RunningJobs: Sendable {
    private let executions = Mutex<[ObjectIdentifier: Execution]>([:])

    func add(_ execution: Execution) {
        WorkerMetrics.running(executions.withLock { $0[ObjectIdentifier(execution)] = execution; return $0.count })
    }

    func remove(_ execution: Execution) {
        WorkerMetrics.running(executions.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(execution)); return $0.count })
    }

    var count: Int { executions.withLock { $0.count } }

    func handBackAll() {
        for execution in executions.withLock({ Array($0.values) }) { execution.stop(.handBack) }
    }

    var leases: [Lease] { executions.withLock { $0.values.map(\.claimed.lease) } }

    func stop(_ ids: Set<JobID>, reason: StopReason) {
        for execution in executions.withLock({ Array($0.values) }) where ids.contains(execution.claimed.job.id) { execution.stop(reason) }
    }
}
