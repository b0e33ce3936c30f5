/// A job's status (docs/spec.md §4): the AVAssetReader status enum. The same cases as
/// `Media.Status` (a reader's, a writer's, a track's status) on purpose: the queue does not
/// depend on the media module, so stores and tools built on it never link FFmpeg.
public enum JobStatus: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Queued: waiting to be claimed, or waiting for its retry time.
    case unknown
    /// Claimed by a worker, running.
    case reading
    case completed
    case failed
    case cancelled

    public var description: String { rawValue }

    public var isTerminal: Bool {
        switch self {
        case .completed, .failed, .cancelled: true
        case .unknown, .reading: false
        }
    }
}

/// Everything that can happen to a job.
public enum JobEvent: Sendable, Hashable {
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
    /// A user cancelled the job (a running one stops within 2 s).
    case cancel
    /// A user asked a failed or cancelled job to run again.
    case retry
}

/// The job state machine of docs/spec.md §4, as a pure function: which status an event leads to, or
/// `nil` when the event is not allowed. Stores implement these transitions in SQL and are
/// tested against this table (the conformance suite); nothing else changes a job's status.
///
/// ```
///            claim              complete
///  unknown ────────▶ reading ────────────▶ completed
///    ▲  │             │  │  fail (final)
///    │  │ cancel      │  ├────────────────▶ failed ──┐
///    │  ▼             │  │  cancel                   │ retry
///    │ cancelled ◀────┘  └────────────────▶ cancelled┤
///    │  fail (retryable, attempts left), lease expired, release
///    └──────────────── reading                       │
///    ◀────────────────────────────────────────────────┘
/// ```
public enum JobStateMachine {
    /// The status after `event` for a job in `status` at `attempt` of `maxAttempts`.
    public static func next(_ status: JobStatus, on event: JobEvent, attempt: Int, maxAttempts: Int) -> JobStatus? {
        let attemptsLeft = attempt < maxAttempts
        switch (status, event) {
        case (.unknown, .claim): return .reading
        case (.unknown, .cancel): return .cancelled
        case (.reading, .complete): return .completed
        case (.reading, .fail(let retryable)): return retryable && attemptsLeft ? .unknown : .failed
        case (.reading, .leaseExpired): return attemptsLeft ? .unknown : .failed
        case (.reading, .release): return .unknown
        case (.reading, .cancel): return .cancelled
        case (.failed, .retry), (.cancelled, .retry): return .unknown
        default: return nil
        }
    }

    /// The statuses in which `event` is allowed.
    public static func sources(of event: JobEvent) -> [JobStatus] {
        JobStatus.allCases.filter { next($0, on: event, attempt: 0, maxAttempts: 1) != nil }
    }
}
