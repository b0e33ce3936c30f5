import Foundation
import JobKinds
import JobctlCore
import Logging
import Media
import ObjectStorage
import Queue
import SafeHTTP

/// Runs attempts: prepares and runs the export, keeps the lease renewed meanwhile, and carries
/// out what `AttemptStateMachine` decides — fence, rename, upload, report — one action at a time.
/// The decisions are all in the state machine; this type only performs them and feeds back what
/// happened.
struct Attempts: Sendable {
    let store: any JobStore
    let options: WorkerOptions
    let sender: HTTPSender
    let running: RunningJobs
    let logger: Logger

    /// Runs `claimed` to its end. Its `slot` is freed as soon as only the report to the store is
    /// left: the worker's next claim can then go in the same commit as that report (one commit
    /// per job instead of two; SQLite, 4 processes: docs/benchmarks.md).
    func execute(_ claimed: ClaimedJob, leaseFrom requested: ContinuousClock.Instant, slot: ClaimSlot) async {
        if claimed.job.kind == .noop {
            slot.free()
            do {
                if try await store.complete(claimed.lease, result: .object([:]), tracks: []) {
                    WorkerMetrics.noopCompleted()
                }
            } catch {
                // The job's logger only when there is something to say: setting its metadata
                // showed in a busy worker's profile (the stream handler re-renders it each time).
                jobLogger(claimed).error(
                    "Reporting the outcome failed; the job will be claimed again after its lease",
                    metadata: ["error": "\(error)"]
                )
            }
            return
        }
        let logger = jobLogger(claimed)
        logger.info(
            "Job claimed",
            metadata: ["job.input": "\(claimed.job.displayInput)", "job.preset": "\(claimed.job.preset)"]
        )
        WorkerMetrics.claimed(runAt: claimed.job.runAt)
        let execution = Execution(claimed, lease: options.lease, renewedAt: requested)
        running.add(execution)
        defer { running.remove(execution) }

        await withTaskGroup(of: Void.self) { group in
            // From the claim to the last report: opening a remote input and uploading an output
            // can take a while, and the lease must hold (and cancellation reach us) throughout.
            group.addTask { await monitor(execution, logger: logger) }
            var finished: FinishedRun?
            var publisher: OutputPublisher?
            let outcome: AttemptStateMachine.ExportOutcome
            do {
                if claimed.job.graphPhase == .join { Failpoints.hit("before-join", logger: logger) }
                let prepared = try await Self.prepare(claimed, store: store, options: options, sender: sender)
                execution.attach(prepared)
                // Stopped while it was being prepared: `attach` cancelled it; do not start it.
                if execution.stopReason != nil { throw MediaError.cancelled() }
                if let children = prepared.fanOut {
                    outcome = try await fanOut(children, execution, logger: logger)
                } else {
                    let started = ContinuousClock.now
                    let run = try await prepared.run()
                    if let seconds = run.mediaSeconds {
                        WorkerMetrics.encoded(mediaSeconds: seconds, in: .now - started)
                    }
                    finished = run
                    // Chosen once, from where the outputs go; every file is shown through it.
                    let chosen = OutputPublisher(
                        for: prepared.uploadURL,
                        sender: sender,
                        objectStore: options.objectStore,
                        retryDelays: options.uploadRetryDelays
                    )
                    publisher = chosen
                    outcome = .finished(chosen.delivery)
                }
            } catch {
                outcome = Self.outcome(of: error)
            }
            let attempt = Attempt(
                execution: execution,
                held: finished?.held,
                finished: finished,
                publisher: publisher,
                slot: slot,
                logger: logger
            )
            await carryOut(execution.handle { $0.exportEnded(outcome) }, for: attempt)
            group.cancelAll()
        }
    }

    private func jobLogger(_ claimed: ClaimedJob) -> Logger {
        var logger = self.logger
        logger[metadataKey: "job.id"] = "\(claimed.job.id)"
        logger[metadataKey: "job.attempt"] = "\(claimed.lease.attempt)"
        return logger
    }

    // MARK: The lease monitor

    /// While a job runs: renew its lease (with progress) every `heartbeatInterval`, and look for
    /// a cancellation request every `cancellationCheckInterval` (notifications, when the store
    /// has them, also stop it at once: see `JobClaimer.storeChanged`). Quiet once the outcome is
    /// being reported.
    private func monitor(_ execution: Execution, logger: Logger) async {
        let lease = execution.claimed.lease
        var nextHeartbeat = ContinuousClock.now + options.heartbeatInterval
        var nextCancellationCheck = ContinuousClock.now + options.cancellationCheckInterval
        while !Task.isCancelled && execution.isListening {
            try? await Task.sleep(until: min(nextHeartbeat, nextCancellationCheck))
            guard !Task.isCancelled && execution.isListening else { return }
            do {
                if ContinuousClock.now >= nextHeartbeat {
                    nextHeartbeat = .now + options.heartbeatInterval
                    nextCancellationCheck = .now + options.cancellationCheckInterval
                    let prepared = execution.prepared
                    let sent = ContinuousClock.now
                    let state = try await store.heartbeat(
                        lease,
                        progress: prepared?.progress ?? 0,
                        tracks: prepared?.tracks ?? [],
                        extendBy: options.lease
                    )
                    guard execution.isListening else { return }
                    if case .held = state { execution.renewed(at: sent) }
                    if state == .lost, execution.stopReason == nil {
                        logger.warning("Lease lost: abandoning the attempt")
                    }
                    _ = execution.handle { $0.heartbeat(state) }
                } else if ContinuousClock.now >= nextCancellationCheck {
                    nextCancellationCheck = .now + options.cancellationCheckInterval
                    if try await store.cancellationRequests(among: [lease]).contains(lease.jobID) {
                        execution.stop(.cancelRequested)
                    }
                }
            } catch {
                logger.warning("Renewing the lease failed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Carrying out the state machine's actions

    /// What one attempt carries from action to action.
    struct Attempt: ~Copyable {
        let execution: Execution
        /// Taken exactly once: committed, uploaded then discarded, or discarded.
        var held: (any HeldOutput)?
        let finished: FinishedRun?
        /// How the finished outputs are shown (`nil` when nothing finished).
        let publisher: OutputPublisher?
        let slot: ClaimSlot
        let logger: Logger
        var uploadTries = 0
        /// Bytes of each file uploaded so far, by name (a retry resumes after them).
        var uploaded: [String: Int64] = [:]
        /// The output once it is shown (renamed into place, or uploaded): told so after the
        /// store has recorded the completion (`HeldOutput.published`).
        var shown: (any HeldOutput)?

        mutating func takeHeld() -> (any HeldOutput)? {
            defer { held = nil }
            return held
        }
    }

    private func carryOut(_ first: AttemptStateMachine.Action, for attempt: consuming Attempt) async {
        var attempt = attempt
        var action = first
        let execution = attempt.execution
        while true {
            switch action {
            case .none, .cancelExport:
                // Unreachable: every event sent here finds the phase it expects. Should an edit
                // break that, say so rather than end the attempt silently (its lease expires).
                assertionFailure("the attempt stopped without a report: \(action)")
                attempt.logger.error(
                    "The attempt ended without reporting its outcome; the job will be claimed again after its lease"
                )
                return
            case .fence(let delivery, let delay):
                if delay == .zero {
                    if execution.claimed.job.graphPhase == .join {
                        Failpoints.hit("before-join-commit", logger: attempt.logger)
                    }
                    Failpoints.hit(delivery == .rename ? "before-rename" : "before-upload", logger: attempt.logger)
                } else {
                    try? await Task.sleep(for: delay)
                }
                let answer = await fence(execution, logger: attempt.logger)
                action = execution.handle { $0.fenced(answer) }
                switch action {
                case .report, .end: logAbandoned(delivery, execution, logger: attempt.logger)
                default: break
                }
            case .rename:
                do {
                    // Renames and fsyncs (a set: every file) off the event loops.
                    guard let publisher = attempt.publisher else {
                        throw JobError(code: .internalError, message: "an output to show without its publisher")
                    }
                    if let held = attempt.takeHeld() {
                        try await publisher.commit(held)
                        attempt.shown = held
                    }
                    action = execution.handle { $0.renamed(.success(())) }
                } catch {
                    let failure: JobError
                    switch Self.outcome(of: error) {
                    case .failed(let error): failure = error
                    case .cancelled, .finished, .fannedOut:
                        failure = JobError(code: .internalError, message: "renaming the output: \(error)")
                    }
                    action = execution.handle { $0.renamed(.failure(failure)) }
                }
            case .upload:
                let outcome = await upload(&attempt, tries: attempt.uploadTries)
                if case .retry = outcome { attempt.uploadTries += 1 }
                if case .uploaded = outcome { attempt.shown = attempt.held }
                action = execution.handle { $0.uploadEnded(outcome) }
            case .waitToRetryUpload(let delay):
                let deadline = ContinuousClock.now + delay
                while ContinuousClock.now < deadline && !execution.shouldStopTransfer {
                    try? await Task.sleep(for: min(.milliseconds(100), deadline - .now))
                }
                action = execution.handle { $0.retryDelayElapsed() }
            case .report(let report, let discardOutput):
                if discardOutput, let held = attempt.takeHeld() { await Self.discard(held) }
                attempt.slot.free()  // the work is over; the report is one store call
                let accepted = await self.report(report, attempt)
                // Only once the completion is recorded may what the output no longer needs go:
                // a lease lost before that means another attempt, which may need it.
                if accepted == true, case .complete = report, let shown = attempt.shown {
                    _ = try? await onDedicatedThread("jobctl.published") { shown.published() }
                }
                action = execution.handle { $0.reported(accepted: accepted) }
            case .end(let outcome, let discardOutput):
                if discardOutput, let held = attempt.takeHeld() { await Self.discard(held) }
                WorkerMetrics.attemptEnded(outcome, after: .now - execution.claimedAt)
                return
            }
        }
    }

    private func logAbandoned(_ delivery: AttemptStateMachine.Delivery, _ execution: Execution, logger: Logger) {
        switch (delivery, execution.stopReason) {
        case (.rename, .leaseLost): logger.warning("Lease lost before committing: output discarded")
        case (.rename, .handBack): logger.warning("Lease renewed too late to commit: output discarded, job handed back")
        case (.upload, .leaseLost), (.upload, .handBack):
            logger.warning("Lease lost before uploading: output discarded")
        case (_, .cancelRequested), (_, nil): break
        }
    }

    /// Checks against the store, just before an output becomes visible (a rename, each PUT),
    /// that this worker still holds the attempt, and renews the lease. The state machine decides
    /// what the answer means; an answer that came after the lease's local deadline is `late`
    /// (nothing may be shown on its strength).
    func fence(_ execution: Execution, logger: Logger) async -> AttemptStateMachine.FenceAnswer {
        let sent = ContinuousClock.now
        do {
            let tracks = execution.prepared?.tracks ?? []
            switch try await store.heartbeat(
                execution.claimed.lease,
                progress: 1,
                tracks: tracks,
                extendBy: options.lease
            ) {
            case .lost:
                return .lost
            case .held(let cancelRequested):
                execution.renewed(at: sent)
                return .held(cancelRequested: cancelRequested, late: execution.leaseMayBeLost)
            }
        } catch {
            let deadlinePassed = execution.leaseMayBeLost
            if deadlinePassed {
                logger.warning(
                    "The job database did not answer before the lease's deadline",
                    metadata: ["error": "\(error)"]
                )
            } else {
                logger.warning("Checking the lease failed; trying again", metadata: ["error": "\(error)"])
            }
            return .unanswered(deadlinePassed: deadlinePassed)
        }
    }

    /// Makes the one store call that ends the attempt; `nil` when the store could not be reached
    /// (the lease will expire and the job run again).
    private func report(_ report: AttemptStateMachine.Report, _ attempt: borrowing Attempt) async -> Bool? {
        let (execution, logger) = (attempt.execution, attempt.logger)
        let lease = execution.claimed.lease
        do {
            switch report {
            case .complete(let uploadedBytes):
                guard let finished = attempt.finished else { preconditionFailure("completed without a result") }
                if let uploadedBytes { WorkerMetrics.uploaded(bytes: uploadedBytes) }
                let result = finished.result(uploadedBytes == nil ? nil : attempt.uploaded)
                let accepted = try await store.complete(
                    lease,
                    result: result,
                    tracks: execution.prepared?.tracks ?? []
                )
                if accepted {
                    logger.info("Job completed", metadata: ["job.output": "\(execution.claimed.job.displayOutput)"])
                } else {
                    logger.warning("Lease lost while completing; the next attempt will replace the output")
                }
                return accepted
            case .fail(let error):
                // An API key's job sees its own relative paths in messages, not the host's.
                let error = JobPaths.shown(
                    error,
                    for: execution.claimed.job,
                    inputRoot: options.inputRoot,
                    outputRoot: options.outputRoot,
                    workerDirectories: [options.scratchDirectory, options.stagingDirectory]
                )
                let delay = options.retryPolicy.delay(afterAttempt: lease.attempt)
                let accepted = try await store.fail(lease, error: error, retryDelay: delay)
                if accepted {
                    logger.warning(
                        "Job failed",
                        metadata: [
                            "error.code": "\(error.code)", "error.message": "\(error.message)",
                            "error.retryable": "\(error.retryable)",
                        ]
                    )
                }
                return accepted
            case .confirmCancelled:
                let accepted = try await store.confirmCancelled(lease)
                logger.info("Job cancelled")
                return accepted
            case .release:
                let accepted = try await store.release(lease)
                logger.info("Job handed back")
                return accepted
            }
        } catch {
            logger.error(
                "Reporting the outcome failed; the job will be claimed again after its lease",
                metadata: ["error": "\(error)"]
            )
            return nil
        }
    }
}
