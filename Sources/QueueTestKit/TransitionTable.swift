import Foundation
import Queue
import Testing

/// `JobStoreConformance.Check.transitionTable`: the store against `JobStateMachine`, every
/// state a job can be in × every event, through the store's public API.
///
/// Each cell arranges a fresh job in the state (queued; running with attempts left or on its
/// last attempt, with or without a cancel request; completed; failed; cancelled), applies the
/// event the way a worker or a user would, and compares the job read back (status, cancel
/// request, attempt, maxAttempts) with `JobStateMachine.next`. Where the machine refuses the
/// event, the store must refuse it too (a `conflict`, a `false` from a fenced call, no claim)
/// and leave the job as it was.
enum TransitionTable {
    /// A state to arrange.
    struct From: CustomStringConvertible {
        var status: JobStatus
        var cancelRequested = false
        var attemptsLeft = true

        var description: String {
            "\(status)\(cancelRequested ? " (cancel requested)" : "")\(attemptsLeft ? "" : " (last attempt)")"
        }
    }

    static let states: [From] = [
        From(status: .unknown),
        From(status: .reading), From(status: .reading, attemptsLeft: false),
        From(status: .reading, cancelRequested: true),
        From(status: .reading, cancelRequested: true, attemptsLeft: false),
        From(status: .completed), From(status: .failed), From(status: .cancelled),
    ]

    static let lease = Duration.seconds(30)

    static func check(_ h: Harness) async throws {
        var cell = 0
        for from in states {
            for event in JobEvent.allCases {
                cell += 1
                try await check(from, event, cell: cell, h)
            }
        }
    }

    /// The job's state as the machine sees it.
    static func state(_ job: Job, budget: Int) -> JobStateMachine.State {
        JobStateMachine.State(
            status: job.status,
            cancelRequested: job.cancelRequested,
            attempt: job.attempt,
            maxAttempts: job.maxAttempts,
            attemptBudget: budget
        )
    }

    private static func check(_ from: From, _ event: JobEvent, cell: Int, _ h: Harness) async throws {
        let what = "\(from) on \(event)"
        // Each cell's job outranks every earlier one, so a claim takes it whenever it is claimable.
        let budget = from.attemptsLeft ? 2 : 1
        let (id, lease) = try await arrange(from, name: "cell-\(cell)", priority: cell, budget: budget, h)
        let before = try await h.fetch(id)
        try #require(
            before.status == from.status && before.cancelRequested == from.cancelRequested,
            "arranging \(from) gave \(before.status)"
        )
        var expected = JobStateMachine.next(state(before, budget: budget), on: event)

        let accepted: Bool
        switch event {
        case .claim:
            let claimed = try await h.handle(1).claim(as: Harness.workerB, limit: 1, lease: Self.lease)
            accepted = claimed.first?.job.id == id
        case .complete:
            accepted = try await h.handle(2).complete(
                lease,
                result: .object(["cell": .number(Double(cell))]),
                tracks: []
            )
        case .fail(let retryable):
            let error = retryable ? Checks.retryableError : Checks.finalError
            accepted = try await h.handle(2).fail(lease, error: error, retryDelay: .zero)
        case .leaseExpired:
            h.clock.advance(by: Self.lease + .seconds(1))
            if from.status == .reading {
                // Stores notice an expired lease when they claim: observe it through a claim,
                // which takes the job over at once when it goes back to the queue.
                let claimed = try await h.handle(1).claim(as: Harness.workerB, limit: 1, lease: Self.lease)
                if let after = expected, after.status == .unknown {
                    expected = JobStateMachine.next(after, on: .claim)
                    accepted = claimed.first?.job.id == id
                } else {
                    accepted = expected != nil && claimed.first?.job.id != id
                }
            } else {
                accepted = false
            }
        case .release:
            accepted = try await h.handle(2).release(lease)
        case .cancel:
            accepted = try await outcome(of: "cancel", { try await h.handle(3).cancel(id) }) != nil
        case .confirmCancelled:
            accepted = try await h.handle(2).confirmCancelled(lease)
        case .retry(let force):
            accepted = try await outcome(of: "retry", { try await h.handle(3).retry(id, force: force) }) != nil
        }

        let after = try await h.fetch(id)
        #expect(
            accepted == (expected != nil),
            "\(what): the store \(accepted ? "accepted" : "refused") it, the state machine \(expected == nil ? "refuses" : "allows") it"
        )
        let reached = expected ?? state(before, budget: budget)
        #expect(
            after.status == reached.status,
            "\(what): status \(after.status), the state machine says \(reached.status)"
        )
        #expect(
            after.cancelRequested == reached.cancelRequested,
            "\(what): cancel requested \(after.cancelRequested), expected \(reached.cancelRequested)"
        )
        #expect(after.attempt == reached.attempt, "\(what): attempt \(after.attempt), expected \(reached.attempt)")
        #expect(
            after.maxAttempts == reached.maxAttempts,
            "\(what): maxAttempts \(after.maxAttempts), expected \(reached.maxAttempts)"
        )
        #expect(
            (after.finishedAt != nil) == after.status.isTerminal,
            "\(what): finishedAt \(String(describing: after.finishedAt)) for \(after.status)"
        )
    }

    /// A refused call is a `conflict` (`nil` here); anything else fails the check.
    private static func outcome<T>(of call: String, _ body: () async throws -> T) async throws -> T? {
        do {
            return try await body()
        } catch let error as JobStoreError {
            guard error.code == .conflict else { throw error }
            return nil
        }
    }

    /// A job in `from`, and a lease on it: the lease of its (last) attempt, or one that never
    /// existed for a job never claimed.
    private static func arrange(
        _ from: From,
        name: String,
        priority: Int,
        budget: Int,
        _ h: Harness
    ) async throws -> (JobID, Lease) {
        let job = try await h.submit(name, priority: priority, maxAttempts: budget)
        let never = Lease(
            jobID: job.id,
            token: "0123456789abcdef0123456789abcdef",
            attempt: 1,
            worker: Harness.workerA.name
        )
        switch from.status {
        case .unknown:
            return (job.id, never)
        case .cancelled:
            _ = try await h.store.cancel(job.id)
            return (job.id, never)
        case .reading, .completed, .failed:
            break
        }
        if !from.attemptsLeft && from.status == .reading {
            // The last attempt: with a budget of 1, the first claim is it.
            try #require(budget == 1)
        }
        let claimed = try await h.claim(job.id, lease: Self.lease)
        switch from.status {
        case .reading where from.cancelRequested:
            _ = try await h.store.cancel(job.id)
        case .completed:
            try #require(try await h.store.complete(claimed.lease, result: .object([:]), tracks: []))
        case .failed:
            try #require(try await h.store.fail(claimed.lease, error: Checks.finalError, retryDelay: .zero))
        default:
            break
        }
        return (job.id, claimed.lease)
    }
}
