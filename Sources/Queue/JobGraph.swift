/// Job graphs (issue 27): a parent job whose attempt fans out into children (the segments of a
/// split export, or the outputs of one upload), waits without a lease while they run, and is
/// claimed again for its join once every child completed. This is the pure state machine of
/// the parent, as `JobStateMachine` is of every job: the stores apply it in SQL, and the
/// conformance suite checks their SQL against it, every (parent state, event) pair.
///
/// ```
///             fan out (the attempt is            last child completes
///   reading ─────────── not counted) ──▶ waiting ─────────────────────▶ join: unknown
///   (attempt)                        (reading, no lease,                    │ claim
///                                     no worker)                            ▼
///                  a child fails ◀──────┤ │ cancel                      join: reading ──▶ completed
///                  (after its retries)  │ │                                 (the join's own
///                        ▼              │ ▼                                  attempts, crashes
///                      failed        cancelled                               and cancel, as any job)
///                  (siblings cancelled; retry reruns only the children that did not complete)
/// ```
///
/// The parent's visible status stays in the contract: `reading` while its children run
/// (`progress` and the children's tally say how far), `unknown` while its join waits for a
/// worker, then `reading`, then an end. Children are ordinary jobs with their own attempts and
/// retries (`JobStateMachine`); the parent hears of them only when one ends for good.
public enum JobGraphStateMachine {
    /// Where a parent is in its graph.
    public enum Phase: String, Sendable, Hashable, CaseIterable {
        /// Not fanned out: a plain job, or a parent's first attempt before it fans out.
        case none
        /// It has children that have not all completed: they run (the parent holds no lease
        /// and no worker claims it), or the parent ended failed or cancelled because of them.
        case waiting
        /// Every child completed: the parent's join is queued, runs, or has ended.
        case join
    }

    /// How the parent's children stand: each counted once, when it ends for good.
    public struct Children: Sendable, Hashable, Codable, CustomStringConvertible {
        public var total: Int
        public var completed: Int
        public var failed: Int
        public var cancelled: Int

        public init(total: Int, completed: Int = 0, failed: Int = 0, cancelled: Int = 0) {
            self.total = total
            self.completed = completed
            self.failed = failed
            self.cancelled = cancelled
        }

        /// Children not ended yet (queued, running, being cancelled).
        public var active: Int { total - completed - failed - cancelled }

        public var description: String {
            "\(completed)/\(total) completed" + (failed > 0 ? ", \(failed) failed" : "")
                + (cancelled > 0 ? ", \(cancelled) cancelled" : "")
        }
    }

    /// A parent: its own job state (status, attempts, crashes, cancel request), its phase and
    /// its children.
    public struct State: Sendable, Hashable, CustomStringConvertible {
        public var job: JobStateMachine.State
        public var phase: Phase
        public var children: Children

        public init(job: JobStateMachine.State, phase: Phase = .none, children: Children = Children(total: 0)) {
            self.job = job
            self.phase = phase
            self.children = children
        }

        public var description: String {
            "\(job), \(phase)" + (phase == .none ? "" : ", children \(children)")
        }
    }

    /// What can happen to a parent.
    public enum Event: Sendable, Hashable, CustomStringConvertible {
        /// Its attempt creates `children` children and lets go of its lease, in one fenced
        /// transaction. The attempt is not counted (like a hand-back): the join is the next.
        case fanOut(children: Int)
        /// A child ended `completed`.
        case childCompleted
        /// A child ended `failed` (its own retries spent): the parent fails with its error.
        case childFailed
        /// A child ended `cancelled` (the parent's cancel reaching it, or a user's).
        case childCancelled
        /// Anything a plain job goes through (`JobStateMachine`): a claim, its end, a lease
        /// expiring, a hand-back, a cancel, a retry.
        case job(JobEvent)

        public var description: String {
            switch self {
            case .fanOut(let children): "fan out (\(children))"
            case .childCompleted: "child completed"
            case .childFailed: "child failed"
            case .childCancelled: "child cancelled"
            case .job(let event): "\(event)"
            }
        }
    }

    /// What the store must do to the children in the same transaction.
    public enum ChildCommand: Sendable, Hashable {
        case none
        /// Cancel every child not ended: queued ones at once, running ones asked to stop.
        case cancelActive
        /// Queue again every child that ended failed or cancelled; completed ones stay (a
        /// completed child is never encoded twice).
        case rerunUnfinished
    }

    /// The event a child's new status is for its parent: its end, or `nil`.
    public static func childEvent(for status: JobStatus) -> Event? {
        switch status {
        case .completed: .childCompleted
        case .failed: .childFailed
        case .cancelled: .childCancelled
        case .unknown, .reading: nil
        }
    }

    /// The parent's error when child `index` failed with `error`: the child's code, so a client
    /// acts on the parent as on the child.
    public static func parentError(child index: Int?, _ error: JobError?) -> JobError {
        JobError(
            code: error?.code ?? .internalError,
            message: "child \(index ?? 0) failed: \(error?.message ?? "no reason recorded")",
            retryable: false
        )
    }

    /// The most children one parent may have.
    public static let maximumChildren = 10_000

    /// The parent's state after `event` and what happens to its children, or `nil` when the
    /// event is not allowed.
    public static func next(_ state: State, on event: Event) -> (state: State, children: ChildCommand)? {
        var next = state
        switch (state.phase, event) {
        case (.none, .fanOut(let count)):
            // Only a running attempt that nobody asked to stop fans out.
            guard state.job.status == .reading, !state.job.cancelRequested,
                (1...maximumChildren).contains(count)
            else { return nil }
            next.phase = .waiting
            next.children = Children(total: count)
            next.job.attempt -= 1
            next.job.crashes = 0
            return (next, .none)

        case (.none, .job(let event)), (.join, .job(let event)):
            guard let job = JobStateMachine.next(state.job, on: event) else { return nil }
            next.job = job
            // A join that failed or was cancelled and is retried runs its join again: its
            // children all completed.
            return (next, .none)

        case (.waiting, .childCompleted), (.waiting, .childFailed), (.waiting, .childCancelled):
            guard state.children.active > 0 else { return nil }
            switch event {
            case .childCompleted: next.children.completed += 1
            case .childFailed: next.children.failed += 1
            default: next.children.cancelled += 1
            }
            guard state.job.status == .reading else {
                // The parent has ended (a sibling failed, or it was cancelled): later ends only
                // count.
                return (next, .none)
            }
            switch event {
            case .childCompleted where next.children.completed == next.children.total:
                // The last one: the join is queued (claimable, as a plain queued job).
                next.phase = .join
                next.job.status = .unknown
                next.job.cancelRequested = false
                return (next, .none)
            case .childCompleted:
                return (next, .none)
            case .childFailed:
                next.job.status = .failed
                next.job.cancelRequested = false
                return (next, next.children.active > 0 ? .cancelActive : .none)
            default:
                // A child cancelled by someone else than the parent: the graph cannot complete.
                next.job.status = .cancelled
                next.job.cancelRequested = false
                return (next, next.children.active > 0 ? .cancelActive : .none)
            }

        case (.waiting, .job(.cancel)):
            // While its children run, a parent has no worker to ask: it ends at once, and its
            // children are cancelled (within 2 s, as any job).
            guard state.job.status == .reading else { return nil }
            next.job.status = .cancelled
            next.job.cancelRequested = false
            return (next, state.children.active > 0 ? .cancelActive : .none)

        case (.waiting, .job(.retry(let force))):
            // Once every child has stopped: the ones that did not complete run again.
            guard state.job.status == .failed || state.job.status == .cancelled, state.children.active == 0,
                let job = JobStateMachine.next(state.job, on: .retry(force: force))
            else { return nil }
            next.job = job
            next.job.status = .reading
            next.children.failed = 0
            next.children.cancelled = 0
            return (next, .rerunUnfinished)

        default:
            // A waiting parent has no lease, so no claim, end, expiry or hand-back of its own;
            // children end only while the parent waits for them.
            return nil
        }
    }

    /// Whether a parent going from `state` to `next` on `event` (re)writes its result as the
    /// list of what its completed children left (`outputs`): when it ends failed or cancelled
    /// while waiting for them (its webhook then says what stays), and each time one of its
    /// children completes after that (a running child asked to stop may still finish).
    public static func listsOutputs(from state: State, to next: State, on event: Event) -> Bool {
        guard next.phase == .waiting, next.job.status == .failed || next.job.status == .cancelled else { return false }
        return !state.job.status.isTerminal || event == .childCompleted
    }

    /// The result of a parent that ended without completing: `outputs`, each completed child's
    /// kind, output (as shown: a URL without its query) and result, in the children's order, as
    /// a join lists them; `nil` when none completed.
    public static func outputs(of children: [Job]) -> JSONValue? {
        let completed = children.filter { $0.status == .completed }.sorted {
            ($0.childIndex ?? 0) < ($1.childIndex ?? 0)
        }
        guard !completed.isEmpty else { return nil }
        return .object(["outputs": .array(completed.map(outputEntry))])
    }

    /// One child's entry in a parent's `outputs`.
    public static func outputEntry(_ child: Job) -> JSONValue {
        .object([
            "kind": .string(child.kind.rawValue),
            "output": .string(child.displayOutput),
            "result": child.result ?? .null,
        ])
    }
}
