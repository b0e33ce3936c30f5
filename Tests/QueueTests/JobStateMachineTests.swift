import Queue
import Testing

/// `JobStateMachine` against the table of docs/spec.md §4: only `unknown→reading`,
/// `reading→completed|failed|cancelled`, `reading→unknown` (lease lost, retryable failure,
/// release), `unknown→cancelled` and `failed|cancelled→unknown` (retry) exist.
@Suite("JobStateMachine")
struct JobStateMachineTests {
    static let events: [JobEvent] = [
        .claim, .complete, .fail(retryable: true), .fail(retryable: false), .leaseExpired, .release, .cancel, .retry,
    ]

    /// The expected status after each event, written out by hand from docs/spec.md §4 and the doc
    /// comment; a missing entry means the event is not allowed.
    static let withAttemptsLeft: [JobStatus: [JobEvent: JobStatus]] = [
        .unknown: [.claim: .reading, .cancel: .cancelled],
        .reading: [
            .complete: .completed, .fail(retryable: true): .unknown, .fail(retryable: false): .failed, .leaseExpired: .unknown,
            .release: .unknown, .cancel: .cancelled,
        ],
        .completed: [:],
        .failed: [.retry: .unknown],
        .cancelled: [.retry: .unknown],
    ]

    static let withNoAttemptsLeft: [JobStatus: [JobEvent: JobStatus]] = [
        .unknown: [.claim: .reading, .cancel: .cancelled],
        .reading: [
            .complete: .completed, .fail(retryable: true): .failed, .fail(retryable: false): .failed, .leaseExpired: .failed,
            .release: .unknown, .cancel: .cancelled,
        ],
        .completed: [:],
        .failed: [.retry: .unknown],
        .cancelled: [.retry: .unknown],
    ]

    /// The transitions docs/spec.md §4 lists, as (from, to).
    static let specTransitions: Set<[JobStatus]> = [
        [.unknown, .reading], [.reading, .completed], [.reading, .failed], [.reading, .cancelled], [.reading, .unknown],
        [.unknown, .cancelled], [.failed, .unknown], [.cancelled, .unknown],
    ]

    @Test("every event, attempts left", arguments: JobStatus.allCases)
    func attemptsLeft(_ status: JobStatus) {
        for (attempt, maxAttempts) in [(0, 1), (1, 3), (2, 3), (1, 2)] {
            for event in Self.events {
                let expected = Self.withAttemptsLeft[status]?[event]
                let actual = JobStateMachine.next(status, on: event, attempt: attempt, maxAttempts: maxAttempts)
                #expect(actual == expected, "\(status) on \(event) at attempt \(attempt) of \(maxAttempts)")
            }
        }
    }

    @Test("every event, no attempts left", arguments: JobStatus.allCases)
    func noAttemptsLeft(_ status: JobStatus) {
        for (attempt, maxAttempts) in [(1, 1), (3, 3), (4, 3)] {
            for event in Self.events {
                let expected = Self.withNoAttemptsLeft[status]?[event]
                let actual = JobStateMachine.next(status, on: event, attempt: attempt, maxAttempts: maxAttempts)
                #expect(actual == expected, "\(status) on \(event) at attempt \(attempt) of \(maxAttempts)")
            }
        }
    }

    @Test("only the transitions of docs/spec.md §4 exist, and all of them do")
    func onlySpecTransitions() {
        var reached: Set<[JobStatus]> = []
        for status in JobStatus.allCases {
            for event in Self.events {
                for (attempt, maxAttempts) in [(0, 3), (3, 3)] {
                    if let next = JobStateMachine.next(status, on: event, attempt: attempt, maxAttempts: maxAttempts) {
                        #expect(Self.specTransitions.contains([status, next]), "\(status) → \(next) on \(event) is not in docs/spec.md §4")
                        reached.insert([status, next])
                    }
                }
            }
        }
        #expect(reached == Self.specTransitions)
    }

    @Test("nothing leaves completed; terminal statuses")
    func terminal() {
        for event in Self.events {
            #expect(JobStateMachine.next(.completed, on: event, attempt: 1, maxAttempts: 3) == nil, "completed on \(event)")
        }
        #expect(JobStatus.allCases.filter(\.isTerminal) == [.completed, .failed, .cancelled])
    }

    @Test("sources(of:)")
    func sources() {
        #expect(JobStateMachine.sources(of: .claim) == [.unknown])
        #expect(JobStateMachine.sources(of: .complete) == [.reading])
        #expect(JobStateMachine.sources(of: .fail(retryable: true)) == [.reading])
        #expect(JobStateMachine.sources(of: .fail(retryable: false)) == [.reading])
        #expect(JobStateMachine.sources(of: .leaseExpired) == [.reading])
        #expect(JobStateMachine.sources(of: .release) == [.reading])
        #expect(JobStateMachine.sources(of: .cancel) == [.unknown, .reading])
        #expect(JobStateMachine.sources(of: .retry) == [.failed, .cancelled])
        for event in Self.events {
            let fromTable = JobStatus.allCases.filter { Self.withAttemptsLeft[$0]?[event] != nil }
            #expect(JobStateMachine.sources(of: event) == fromTable, "sources of \(event)")
        }
    }
}
