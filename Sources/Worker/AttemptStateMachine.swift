import Queue

/// One attempt at a job, from its claim to its report, as a value: the worker tells it what
/// happened (the `mutating func`s are the events) and carries out the `Action` each returns.
/// No I/O, no clock, no lock: `Execution` holds it under a lock, feeds it events from the export,
/// the lease monitor, the claim loop and the upload, and performs the actions outside the lock
/// (the shape of postgres-nio's `PoolStateMachine`).
///
/// ```
///              exportEnded(.finished)        fenced(.held)          renamed / uploadEnded
///  exporting ─────────────────────────▶ committing ──────▶ (rename | uploading) ────────▶ reporting ──▶ ended
///      │  exportEnded(.failed)                │ fenced(.lost | late | unanswered past deadline)   ▲
///      ├──────────────────────────────────────┼──────────────────────────────────────────────────┤
///      │  exportEnded(.cancelled)             ▼                                                  │
///      └──────────────────────────▶ by stop reason: cancelRequested → confirm cancelled ─────────┤
///                                                   handBack / none → release ───────────────────┘
///                                                   leaseLost → ended, nothing reported
/// ```
///
/// A stop (`cancelRequested`, `leaseLost`, `handBack`) can arrive at any time before the
/// report; the first one wins. Once the outcome is being reported, the attempt no longer
/// listens: the report is the last word, and exactly one store call makes it (or none, when the
/// lease was lost).
struct AttemptStateMachine: Sendable, Hashable {
    enum StopReason: Sendable, Hashable {
        case cancelRequested
        case leaseLost
        /// Graceful shutdown ran out of drain time: give the job back.
        case handBack
    }

    /// How a finished output becomes visible: renamed into place, or uploaded (HTTP PUT).
    enum Delivery: Sendable, Hashable {
        case rename
        case upload
    }

    enum ExportOutcome: Sendable, Hashable {
        case finished(Delivery)
        /// The export stopped because the attempt was stopped.
        case cancelled
        case failed(JobError)
        /// The attempt fanned out into children (the store took them and the job's lease):
        /// nothing more to report (issue 27).
        case fannedOut
    }

    /// What checking the lease against the store just before an output becomes visible found.
    enum FenceAnswer: Sendable, Hashable {
        /// Still ours, renewed. `late`: the answer came after the lease's local deadline, too late
        /// to show anything on its strength.
        case held(cancelRequested: Bool, late: Bool)
        case lost
        /// The store did not answer (an error); `deadlinePassed` once the local deadline passed.
        case unanswered(deadlinePassed: Bool)
    }

    enum UploadOutcome: Sendable, Hashable {
        case uploaded(bytes: Int64)
        case failed(JobError)
        /// The transfer stopped because the attempt was stopped (or its lease may be lost).
        case stopped
        /// A failure worth another PUT within this attempt, after a delay.
        case retry(after: Duration)
    }

    /// The one store call that ends an attempt.
    enum Report: Sendable, Hashable {
        /// `uploadedBytes` for an uploaded output (the result's size is the upload's).
        case complete(uploadedBytes: Int64?)
        case fail(JobError)
        case confirmCancelled
        case release
    }

    /// How the attempt ended (the `outcome` label of the attempt metrics).
    enum Outcome: String, Sendable, Hashable, CaseIterable {
        case completed
        /// Failed for good.
        case failed
        /// Failed, queued again after a backoff.
        case retried
        case cancelled
        /// Stopped by a drain and given back to the queue.
        case handedBack = "handed_back"
        /// Another worker took the job over; this attempt was abandoned.
        case leaseLost = "lease_lost"
        /// The store could not be told; the lease will expire and the job run again.
        case unreported
        /// A graph's parent created its children and waits for them, without a lease.
        case fannedOut = "fanned_out"
    }

    enum Action: Sendable, Hashable {
        case none
        /// Cancel the export session (it ends with `exportEnded(.cancelled)`).
        case cancelExport
        /// Check the lease against the store, after `delay`, then send `fenced(_:)`.
        case fence(Delivery, after: Duration)
        /// Rename the output into place, then send `renamed(_:)`.
        case rename
        /// PUT the output, then send `uploadEnded(_:)`.
        case upload
        /// Wait (ending early if the attempt is stopped), then send `retryDelayElapsed()`.
        case waitToRetryUpload(Duration)
        /// Make the report (discarding the temporary output first when asked), then send
        /// `reported(accepted:)`.
        case report(Report, discardOutput: Bool)
        /// The attempt is over: discard the temporary output if asked, count the outcome.
        case end(Outcome, discardOutput: Bool)
    }

    enum Phase: Sendable, Hashable {
        /// Preparing and running the export; the lease monitor runs.
        case exporting
        /// Checking the lease before the output becomes visible, then renaming it.
        case committing(Delivery)
        /// PUT in flight, or waiting to retry it.
        case uploading
        case reporting(Report)
        case ended(Outcome)
    }

    private(set) var phase: Phase = .exporting
    private(set) var stopReason: StopReason?
    /// Fences asked again, unanswered, while the lease's deadline had not passed.
    private(set) var unansweredFences = 0

    /// How many times an unanswered fence is asked again (every 250 ms: 10 s) before the
    /// attempt gives up as if the lease were lost. Renewals by the lease monitor push the
    /// deadline on, so a store that keeps failing this one call would otherwise hold the
    /// attempt (and its slot) forever.
    static let maxUnansweredFences = 40
    let attempt: Int
    let maxAttempts: Int

    init(attempt: Int, maxAttempts: Int) {
        self.attempt = attempt
        self.maxAttempts = maxAttempts
    }

    /// Whether the lease monitor should keep renewing and listening: until the outcome is being
    /// reported.
    var isListening: Bool {
        switch phase {
        case .exporting, .committing, .uploading: true
        case .reporting, .ended: false
        }
    }

    // MARK: Events

    /// The attempt is asked to stop (a cancellation, the lease found lost, the drain over).
    mutating func stop(_ reason: StopReason) -> Action {
        guard isListening, stopReason == nil else { return .none }
        stopReason = reason
        return phase == .exporting ? .cancelExport : .none
    }

    /// The lease monitor's renewal answered.
    mutating func heartbeat(_ state: LeaseState) -> Action {
        switch state {
        case .lost: stop(.leaseLost)
        case .held(cancelRequested: true): stop(.cancelRequested)
        case .held(cancelRequested: false): .none
        }
    }

    mutating func exportEnded(_ outcome: ExportOutcome) -> Action {
        guard phase == .exporting else { return .none }
        switch outcome {
        case .finished(let delivery):
            phase = .committing(delivery)
            return .fence(delivery, after: .zero)
        case .cancelled:
            return abandon(discardOutput: false)
        case .failed(let error):
            return report(.fail(error), discardOutput: false)
        case .fannedOut:
            // The fan-out was the report: one store call that created the children and let go
            // of the lease.
            phase = .ended(.fannedOut)
            return .end(.fannedOut, discardOutput: false)
        }
    }

    mutating func fenced(_ answer: FenceAnswer) -> Action {
        guard case .committing(let delivery) = phase else { return .none }
        switch answer {
        case .lost, .unanswered(deadlinePassed: true):
            _ = stop(.leaseLost)
            return abandon(discardOutput: true)
        case .unanswered(deadlinePassed: false):
            // A database blip never costs an attempt: ask again until the deadline, or until
            // it has been asked `maxUnansweredFences` times.
            unansweredFences += 1
            guard unansweredFences < Self.maxUnansweredFences else {
                _ = stop(.leaseLost)
                return abandon(discardOutput: true)
            }
            return .fence(delivery, after: .milliseconds(250))
        case .held(let cancelRequested, let late):
            if cancelRequested { _ = stop(.cancelRequested) }
            if late {
                _ = stop(.handBack)
                return abandon(discardOutput: true)
            }
            switch (delivery, stopReason) {
            case (.rename, nil), (.rename, .handBack):
                // A job finished during a drain is still worth completing.
                return .rename
            case (.upload, nil):
                phase = .uploading
                return .upload
            case (_, .some):
                return abandon(discardOutput: true)
            }
        }
    }

    mutating func renamed(_ result: Result<Void, JobError>) -> Action {
        guard phase == .committing(.rename) else { return .none }
        switch result {
        case .success: return report(.complete(uploadedBytes: nil), discardOutput: false)
        case .failure(let error): return report(.fail(error), discardOutput: false)
        }
    }

    mutating func uploadEnded(_ outcome: UploadOutcome) -> Action {
        guard phase == .uploading else { return .none }
        switch outcome {
        case .uploaded(let bytes): return report(.complete(uploadedBytes: bytes), discardOutput: true)
        case .failed(let error): return report(.fail(error), discardOutput: true)
        case .stopped: return abandon(discardOutput: true)
        case .retry(let delay): return .waitToRetryUpload(delay)
        }
    }

    mutating func retryDelayElapsed() -> Action {
        guard phase == .uploading else { return .none }
        guard stopReason == nil else { return abandon(discardOutput: true) }
        phase = .committing(.upload)
        return .fence(.upload, after: .zero)
    }

    /// The report was made: `accepted` is the store's answer (`false`: the lease was lost),
    /// `nil` when the store could not be reached.
    mutating func reported(accepted: Bool?) -> Action {
        guard case .reporting(let report) = phase else { return .none }
        let outcome: Outcome
        switch (report, accepted) {
        case (_, nil): outcome = .unreported
        case (.complete, true?): outcome = .completed
        case (.fail(let error), true?): outcome = error.retryable && attempt < maxAttempts ? .retried : .failed
        case (.complete, false?), (.fail, false?): outcome = .leaseLost
        case (.confirmCancelled, _?): outcome = .cancelled
        case (.release, _?): outcome = .handedBack
        }
        phase = .ended(outcome)
        return .end(outcome, discardOutput: false)
    }

    // MARK: Helpers

    private mutating func report(_ report: Report, discardOutput: Bool) -> Action {
        phase = .reporting(report)
        return .report(report, discardOutput: discardOutput)
    }

    /// The attempt stops without an output, reported as its stop reason says.
    private mutating func abandon(discardOutput: Bool) -> Action {
        switch stopReason {
        case .cancelRequested:
            return report(.confirmCancelled, discardOutput: discardOutput)
        case .leaseLost:
            phase = .ended(.leaseLost)
            return .end(.leaseLost, discardOutput: discardOutput)
        case .handBack, nil:
            return report(.release, discardOutput: discardOutput)
        }
    }
}
