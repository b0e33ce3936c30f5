import JobctlCore

/// A job's status (docs/spec.md §4): the names of AVAssetReader's statuses, as the contract
/// says, but the queue's own type, so the job lifecycle can grow (a parent waiting on its
/// children) without touching the media pipeline's `Status`. Same raw values: the job JSON,
/// the API and the stored rows do not change.
public enum JobStatus: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Queued: waiting to be claimed, or for its retry time.
    case unknown
    /// Claimed by a worker and running.
    case reading
    case completed
    case failed
    case cancelled

    public var description: String { rawValue }

    /// `completed`, `failed` and `cancelled` are final.
    public var isTerminal: Bool {
        switch self {
        case .completed, .failed, .cancelled: true
        case .unknown, .reading: false
        }
    }
}

/// Everything that can happen to a job.
public enum JobEvent: Sendable, Hashable, CaseIterable {
    /// A worker claims the job (a new attempt).
    case claim
    /// The attempt produced its output.
    case complete
    /// The attempt failed; `retryable` failures run again while attempts remain.
    case fail(retryable: Bool)
    /// The worker stopped renewing its lease (killed, host lost): another worker takes over
    /// while attempts remain.
    case leaseExpired
    /// The worker handed the job back unfinished (graceful shutdown): another worker resumes it.
    case release
    /// A user cancelled the job: a queued one ends at once, a running one is asked to stop.
    case cancel
    /// The worker stopped a running job and confirms it.
    case confirmCancelled
    /// A user asked a failed or cancelled job to run again; `force` also runs a poison job
    /// (one that ended `worker_crashed`) again.
    case retry(force: Bool)

    public static let allCases: [JobEvent] = [
        .claim, .complete, .fail(retryable: true), .fail(retryable: false), .leaseExpired, .release, .cancel,
        .confirmCancelled, .retry(force: false), .retry(force: true),
    ]
}

/// The job state machine (docs/spec.md §4) as a pure function: the state an event leads to, or
/// `nil` when the event is not allowed. It is the single source of truth for job transitions:
/// the in-memory store (`MemoryJobStore`) applies it directly, and the SQL of the SQLite and
/// PostgreSQL stores is checked against it, every (state, event) pair, by the conformance
/// suite (`JobStoreConformance.Check.transitionTable`).
///
/// ```
///              claim                      complete
///   unknown ─────────────▶ reading ─────────────────────▶ completed
///    │  ▲  ▲                │  │ │ fail (final), lease expired
///    │  │  │ release, fail  │  │ │ on the last attempt
///    │  │  │ (retryable,    │  │ └──────────────────────▶ failed ────┐
///    │  │  │ attempts left),│  │ cancel                              │
///    │  │  │ lease expired  │  ▼                                     │
///    │  │  └────────────────┘ reading, cancel requested              │
///    │  │                      │ confirm, release, retryable fail,   │
///    │  │                      │ lease expired                       │
///    │  │ retry                ▼                                     │
///    │  └────────────────── cancelled ◀──── cancel ── unknown        │
///    └─────────────────────────────────────────────────── retry ─────┘
/// ```
///
/// **Poison jobs.** `crashes` counts the attempts that ended with the lease expiring (the
/// worker killed, crashed or frozen) since the job last ran to an end, was handed back or was
/// retried; a failure the worker reports does not reset it. At `crashLimit` the job fails at
/// once, whatever attempts it has left (`worker_crashed`, not retryable), and only
/// `retry(force: true)` runs it again: one input that kills its worker cannot take a fleet
/// down one worker after another.
public enum JobStateMachine {
    /// What decides a job's next state.
    public struct State: Sendable, Hashable, CustomStringConvertible {
        public var status: JobStatus
        /// A user asked the running job to stop; its worker has not confirmed yet. Only
        /// `reading` jobs carry it; every transition out of `reading` clears it.
        public var cancelRequested: Bool
        /// Attempts started so far (a released attempt is not counted).
        public var attempt: Int
        public var maxAttempts: Int
        /// The number of attempts the job was submitted with; `retry` grants it again.
        public var attemptBudget: Int
        /// Attempts that ended with the lease expiring, since the last reset (see "Poison jobs" above).
        public var crashes: Int

        public init(
            status: JobStatus,
            cancelRequested: Bool = false,
            attempt: Int,
            maxAttempts: Int,
            attemptBudget: Int? = nil,
            crashes: Int = 0
        ) {
            self.status = status
            self.cancelRequested = cancelRequested
            self.attempt = attempt
            self.maxAttempts = maxAttempts
            self.attemptBudget = attemptBudget ?? maxAttempts
            self.crashes = crashes
        }

        public var attemptsLeft: Bool { attempt < maxAttempts }

        /// Failed because its workers died on `crashLimit` attempts since the last reset.
        public var isPoisoned: Bool { crashes >= JobStateMachine.crashLimit }

        public var description: String {
            "\(status)\(cancelRequested ? " (cancel requested)" : "") at attempt \(attempt) of \(maxAttempts)"
                + (crashes > 0 ? ", \(crashes) crash\(crashes == 1 ? "" : "es")" : "")
        }
    }

    /// Attempts in a row whose worker died after which a job is a poison job (`worker_crashed`).
    public static let crashLimit = 3

    /// The state after `event`, or `nil` when `event` is not allowed in `state`.
    public static func next(_ state: State, on event: JobEvent) -> State? {
        var next = state
        next.cancelRequested = false
        // Only a lease expiring adds to the crashes. A failure the worker reports does not
        // start the count again (an input that fails retryably on every third attempt would
        // otherwise kill workers for ever); a hand-back, a retry and the job's end do.
        switch event {
        case .complete, .release, .confirmCancelled, .retry: next.crashes = 0
        case .claim, .cancel, .leaseExpired, .fail: break
        }
        switch (state.status, event) {
        case (.unknown, .claim):
            next.status = .reading
            next.attempt += 1
        case (.unknown, .cancel):
            next.status = .cancelled
        case (.reading, .cancel):
            next.cancelRequested = true
        case (.reading, .complete):
            // The output is done: it stands even if a cancel request arrived meanwhile.
            next.status = .completed
        case (.reading, .fail(let retryable)):
            // A retryable failure after a cancel request ends the job: it never runs again.
            next.status =
                retryable && state.cancelRequested ? .cancelled : retryable && state.attemptsLeft ? .unknown : .failed
        case (.reading, .leaseExpired):
            // A job being cancelled ends cancelled: its worker's death is not counted.
            next.crashes = state.cancelRequested ? 0 : state.crashes + 1
            next.status =
                state.cancelRequested ? .cancelled : next.isPoisoned || !state.attemptsLeft ? .failed : .unknown
        case (.reading, .release):
            // A hand-back does not count the attempt, unless it ends the job.
            next.status = state.cancelRequested ? .cancelled : .unknown
            if !state.cancelRequested { next.attempt -= 1 }
        case (.reading, .confirmCancelled):
            next.status = .cancelled
        case (.failed, .retry(let force)), (.cancelled, .retry(let force)):
            guard force || !state.isPoisoned || state.status != .failed else { return nil }
            next.status = .unknown
            next.maxAttempts = state.attempt + state.attemptBudget
        default:
            return nil
        }
        return next
    }

    /// The status after `event` for a job in `status` (no cancel request) at `attempt` of
    /// `maxAttempts`, or `nil` when the event is not allowed.
    public static func next(_ status: JobStatus, on event: JobEvent, attempt: Int, maxAttempts: Int) -> JobStatus? {
        next(State(status: status, attempt: attempt, maxAttempts: maxAttempts), on: event)?.status
    }

    /// The statuses in which `event` is allowed.
    public static func sources(of event: JobEvent) -> [JobStatus] {
        JobStatus.allCases.filter { next($0, on: event, attempt: 0, maxAttempts: 1) != nil }
    }
}

/// A job's progress as the stores keep it: a fraction in 0...1. What a worker reports is
/// clamped, and a value that is not a number (a duration of zero divided by itself) is 0:
/// it would otherwise be stored as NULL or NaN and trap whoever shows it as a percent.
public enum JobProgress {
    public static func clamped(_ value: Double) -> Double { value.isFinite ? min(max(value, 0), 1) : 0 }

    /// The whole percent of a progress, 0...100, whatever it holds.
    public static func wholePercent(_ value: Double) -> Int { Int((clamped(value) * 100).rounded(.down)) }
}
