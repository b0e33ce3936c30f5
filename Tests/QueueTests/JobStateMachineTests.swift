import Queue
import Testing

/// `JobStateMachine` against the table of docs/spec.md §4, every state (status, cancel
/// requested or not, attempts left or not, crashes in a row) × every event, written out by hand.
@Suite("JobStateMachine")
struct JobStateMachineTests {
    /// A row of the table: the state an event starts from, by status and flags.
    struct From: Hashable, CustomStringConvertible {
        var status: JobStatus
        var cancelRequested = false
        var attemptsLeft = true
        /// Attempts in a row whose worker died.
        var crashes = 0

        var description: String {
            "\(status)\(cancelRequested ? "+cancel" : "")\(attemptsLeft ? "" : " (last attempt)")"
                + (crashes > 0 ? " (\(crashes) crashes)" : "")
        }

        /// At attempt 1 of 10 (attempts left) or 10 of 10.
        var state: JobStateMachine.State {
            JobStateMachine.State(
                status: status,
                cancelRequested: cancelRequested,
                attempt: attemptsLeft ? 1 : 10,
                maxAttempts: 10,
                crashes: crashes
            )
        }
    }

    /// Every state a job can be in: cancel requested only while `reading`; a running job one
    /// crash short of the limit or not; a failed job poisoned or not.
    static let states: [From] = JobStatus.allCases.flatMap { status in
        [true, false].flatMap { attemptsLeft in
            (status == .reading ? [false, true] : [false]).flatMap { cancelRequested in
                let crashes: [Int] =
                    switch status {
                    case .reading: [0, JobStateMachine.crashLimit - 1]
                    case .failed: [0, JobStateMachine.crashLimit]
                    default: [0]
                    }
                return crashes.map {
                    From(status: status, cancelRequested: cancelRequested, attemptsLeft: attemptsLeft, crashes: $0)
                }
            }
        }
    }

    /// The status (and cancel request) after each event, by hand; absent means not allowed.
    static func expected(_ from: From, _ event: JobEvent) -> (JobStatus, cancelRequested: Bool)? {
        switch (from.status, event) {
        case (.unknown, .claim): (.reading, false)
        case (.unknown, .cancel): (.cancelled, false)
        case (.reading, .complete): (.completed, false)
        case (.reading, .cancel): (.reading, true)
        case (.reading, .confirmCancelled): (.cancelled, false)
        case (.reading, .fail(retryable: false)): (.failed, false)
        case (.reading, .fail(retryable: true)):
            (from.cancelRequested ? .cancelled : from.attemptsLeft ? .unknown : .failed, false)
        case (.reading, .leaseExpired):
            // The third crash in a row fails the job whatever attempts it has left.
            (
                from.cancelRequested
                    ? .cancelled
                    : from.crashes == JobStateMachine.crashLimit - 1 || !from.attemptsLeft ? .failed : .unknown,
                false
            )
        case (.reading, .release): (from.cancelRequested ? .cancelled : .unknown, false)
        case (.failed, .retry(force: false)): from.crashes >= JobStateMachine.crashLimit ? nil : (.unknown, false)
        case (.failed, .retry(force: true)), (.cancelled, .retry): (.unknown, false)
        default: nil
        }
    }

    /// Crashes after an event, by hand: a lease expiring adds one (unless it ends a cancel); a
    /// claim, a cancel request and a reported failure keep them; a hand-back, a retry and the
    /// job's end start again.
    static func expectedCrashes(_ from: From, _ event: JobEvent) -> Int {
        switch event {
        case .leaseExpired: from.cancelRequested ? 0 : from.crashes + 1
        case .claim, .cancel, .fail: from.crashes
        case .complete, .release, .confirmCancelled, .retry: 0
        }
    }

    @Test("every state × every event", arguments: JobStateMachineTests.states)
    func table(_ from: From) {
        for event in JobEvent.allCases {
            let next = JobStateMachine.next(from.state, on: event)
            let expected = Self.expected(from, event)
            #expect(next?.status == expected?.0, "\(from) on \(event)")
            #expect(next?.cancelRequested == expected?.cancelRequested, "\(from) on \(event): cancel requested")
            if let next { #expect(next.crashes == Self.expectedCrashes(from, event), "\(from) on \(event): crashes") }
        }
    }

    @Test(
        "a poison job: three crashes fail it with attempts left; reported failures between them do not reset the count, a hand-back does"
    )
    func poisonJobs() {
        var state = JobStateMachine.State(status: .unknown, attempt: 0, maxAttempts: 100)
        for crash in 1...JobStateMachine.crashLimit {
            state = JobStateMachine.next(state, on: .claim)!
            state = JobStateMachine.next(state, on: .leaseExpired)!
            #expect(state.crashes == crash)
            #expect(state.status == (crash == JobStateMachine.crashLimit ? .failed : .unknown))
        }
        #expect(state.isPoisoned && state.attemptsLeft)
        #expect(JobStateMachine.next(state, on: .retry(force: false)) == nil)
        let forced = JobStateMachine.next(state, on: .retry(force: true))
        #expect(forced?.status == .unknown && forced?.crashes == 0)

        // Two crashes, a failure the worker reported (an input that answers 503 every third
        // time), one more: poisoned all the same.
        var mixed = JobStateMachine.State(status: .unknown, attempt: 0, maxAttempts: 100)
        for event: JobEvent in [.leaseExpired, .leaseExpired, .fail(retryable: true), .leaseExpired] {
            mixed = JobStateMachine.next(JobStateMachine.next(mixed, on: .claim)!, on: event)!
        }
        #expect(mixed.status == .failed && mixed.isPoisoned)
        // Two crashes, a hand-back (the worker drained), two more: not poisoned.
        var drained = JobStateMachine.State(status: .unknown, attempt: 0, maxAttempts: 100)
        for event: JobEvent in [.leaseExpired, .leaseExpired, .release, .leaseExpired, .leaseExpired] {
            drained = JobStateMachine.next(JobStateMachine.next(drained, on: .claim)!, on: event)!
        }
        #expect(drained.status == .unknown && drained.crashes == 2)
    }

    @Test(
        "attempts: a claim counts one, a release gives it back unless it ends the job, a retry grants the budget again"
    )
    func attempts() {
        let queued = JobStateMachine.State(status: .unknown, attempt: 0, maxAttempts: 2)
        let running = JobStateMachine.next(queued, on: .claim)
        #expect(running?.attempt == 1)
        #expect(running.flatMap { JobStateMachine.next($0, on: .release) }?.attempt == 0)
        var asked = running!
        asked.cancelRequested = true
        #expect(JobStateMachine.next(asked, on: .release)?.attempt == 1)

        let failed = JobStateMachine.State(status: .failed, attempt: 2, maxAttempts: 2, attemptBudget: 2)
        let retried = JobStateMachine.next(failed, on: .retry(force: false))
        #expect(retried?.status == .unknown)
        #expect(retried?.maxAttempts == 4)
        #expect(retried?.attemptsLeft == true)
    }

    @Test("only the transitions of docs/spec.md §4 exist, and all of them do")
    func onlySpecTransitions() {
        let specTransitions: Set<[JobStatus]> = [
            [.unknown, .reading], [.reading, .completed], [.reading, .failed], [.reading, .cancelled],
            [.reading, .unknown],
            [.unknown, .cancelled], [.failed, .unknown], [.cancelled, .unknown],
            // A cancel request keeps a running job running until its worker stops.
            [.reading, .reading],
        ]
        var reached: Set<[JobStatus]> = []
        for from in Self.states {
            for event in JobEvent.allCases {
                if let next = JobStateMachine.next(from.state, on: event) {
                    #expect(specTransitions.contains([from.status, next.status]), "\(from) → \(next) on \(event)")
                    reached.insert([from.status, next.status])
                }
            }
        }
        #expect(reached == specTransitions)
    }

    @Test("nothing leaves completed; terminal statuses")
    func terminal() {
        for event in JobEvent.allCases {
            #expect(
                JobStateMachine.next(.completed, on: event, attempt: 1, maxAttempts: 3) == nil,
                "completed on \(event)"
            )
        }
        #expect(JobStatus.allCases.filter(\.isTerminal) == [.completed, .failed, .cancelled])
    }

    @Test("sources(of:)")
    func sources() {
        #expect(JobStateMachine.sources(of: .claim) == [.unknown])
        #expect(JobStateMachine.sources(of: .complete) == [.reading])
        #expect(JobStateMachine.sources(of: .fail(retryable: true)) == [.reading])
        #expect(JobStateMachine.sources(of: .leaseExpired) == [.reading])
        #expect(JobStateMachine.sources(of: .release) == [.reading])
        #expect(JobStateMachine.sources(of: .confirmCancelled) == [.reading])
        #expect(JobStateMachine.sources(of: .cancel) == [.unknown, .reading])
        #expect(JobStateMachine.sources(of: .retry(force: false)) == [.failed, .cancelled])
    }
}
