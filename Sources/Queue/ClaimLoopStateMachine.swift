/// The decisions of a claim loop — a worker claiming jobs, a dispatcher claiming webhook
/// deliveries — as a value: how many to claim and when, how to back off when the database fails,
/// when a drain hands work back or ends. The loop (`ClaimLoop`) tells it what happened and does
/// what `next(now:)` says; time is passed in, so every decision is unit-tested without waiting.
///
/// ```
///  running ── stop() ──▶ draining ── nothing running (and, for claimDue, nothing due) ──▶ finished
///    │ claim(limit: free slots) when a slot is free and no backoff is pending
///    │ a failed claim waits 0.5 s, 1 s, 2 s … 10 s (a damaged database: 10 s; `once`: finish)
/// ```
public struct ClaimLoopStateMachine: Sendable, Hashable {
    /// What a graceful shutdown does.
    public enum Drain: Sendable, Hashable {
        /// Stop claiming at once; let running items finish, and after `handBackAfter` ask them to
        /// hand their work back (a worker: jobs go back to the queue for another worker).
        case stopClaiming(handBackAfter: Duration)
        /// Keep claiming what is due for `duration` (a dispatcher delivering what a `--once`
        /// worker produced), then only finish what runs.
        case claimDue(for: Duration)
    }

    public struct Configuration: Sendable, Hashable {
        public var concurrency: Int
        public var drain: Drain
        /// End as soon as a claim finds nothing and nothing runs (`worker --once`), or on a
        /// damaged database.
        public var once: Bool
        public var backoff: ClosedRange<Duration>
        /// The wait after a claim found the database damaged (damage does not heal by itself).
        public var damagedBackoff: Duration

        public init(
            concurrency: Int,
            drain: Drain,
            once: Bool = false,
            backoff: ClosedRange<Duration> = .milliseconds(500)...(.seconds(10)),
            damagedBackoff: Duration = .seconds(10)
        ) {
            self.concurrency = max(1, concurrency)
            self.drain = drain
            self.once = once
            self.backoff = backoff
            self.damagedBackoff = damagedBackoff
        }
    }

    public enum Action: Sendable, Hashable {
        /// Claim up to `limit` items, then report with `claimed(_:now:)` or `claimFailed(_:now:)`.
        case claim(limit: Int)
        /// Ask every running item to hand its work back (the drain time is over).
        case handBack
        /// Nothing to do until the next wake-up (an item finished, a poll, a notification).
        case wait
        /// The loop is over.
        case finish
    }

    public enum ClaimFailure: Sendable, Hashable {
        /// Unreachable, busy, timed out: worth trying again soon.
        case transient
        /// The database is damaged: waiting helps only slowly; `once` ends the loop.
        case damaged
    }

    public let configuration: Configuration
    /// Items claimed and not finished yet.
    public private(set) var running = 0
    /// Items claimed whose work has not ended yet, slots freed or not: an item reporting its
    /// outcome may queue more work (a graph's last child queues its parent's join), so `once`
    /// ends only when none is left.
    public private(set) var unended = 0
    /// When the drain began, once a stop was asked for.
    public private(set) var drainStarted: ContinuousClock.Instant?
    /// The wait after the last failed claim (zero after a success).
    public private(set) var backoff: Duration = .zero
    private var claimAgainAt: ContinuousClock.Instant?
    private var finished = false

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// Whether another item could be claimed (a store notification wakes the loop only then):
    /// a free slot, and not draining — or draining by claiming what is due.
    public var hasFreeSlots: Bool {
        !finished && running < configuration.concurrency && (drainStarted == nil || isDrainingClaims)
    }

    // MARK: Events

    /// A graceful shutdown was asked for. `true` the first time (the drain begins).
    public mutating func stop(now: ContinuousClock.Instant) -> Bool {
        guard drainStarted == nil else { return false }
        drainStarted = now
        return true
    }

    /// `count` running items finished.
    public mutating func finished(_ count: Int) {
        running = max(0, running - count)
    }

    /// `count` items' work ended (their reports made).
    public mutating func ended(_ count: Int) {
        unended = max(0, unended - count)
    }

    /// What to do at a wake-up.
    public mutating func next(now: ContinuousClock.Instant) -> Action {
        guard !finished else { return .finish }
        guard let drainStarted else {
            return canClaim(now: now) ? .claim(limit: configuration.concurrency - running) : .wait
        }
        switch configuration.drain {
        case .stopClaiming(let handBackAfter):
            if running == 0 { return finish() }
            return now >= drainStarted + handBackAfter ? .handBack : .wait
        case .claimDue(let duration):
            let inWindow = now < drainStarted + duration
            if inWindow && canClaim(now: now) { return .claim(limit: configuration.concurrency - running) }
            // Within the window a pending backoff is waited out, not taken for "nothing due".
            return running == 0 && !inWindow ? finish() : .wait
        }
    }

    /// A claim returned `count` items (now running).
    public mutating func claimed(_ count: Int, now: ContinuousClock.Instant) -> Action {
        running += count
        unended += count
        backoff = .zero
        claimAgainAt = nil
        if count == 0 && running == 0 && isDrainingClaims { return finish() }
        if count == 0 && unended == 0 && configuration.once { return finish() }
        return .wait
    }

    /// A claim failed.
    public mutating func claimFailed(_ failure: ClaimFailure, now: ContinuousClock.Instant) -> Action {
        switch failure {
        case .damaged:
            if configuration.once { return finish() }
            backoff = configuration.damagedBackoff
        case .transient:
            backoff = min(max(backoff * 2, configuration.backoff.lowerBound), configuration.backoff.upperBound)
        }
        claimAgainAt = now + backoff
        return .wait
    }

    // MARK: Helpers

    private var isDrainingClaims: Bool {
        guard drainStarted != nil, case .claimDue = configuration.drain else { return false }
        return true
    }

    private func canClaim(now: ContinuousClock.Instant) -> Bool {
        running < configuration.concurrency && claimAgainAt.map { now >= $0 } ?? true
    }

    private mutating func finish() -> Action {
        finished = true
        return .finish
    }
}
