import Foundation
import Queue
import Testing

extension Checks {
    /// Where a parent of three children stands when one of its running children ends.
    enum GraphParentState: String, CaseIterable, Sendable {
        case waitingNoneEnded = "waiting, none ended"
        case waitingOneCompleted = "waiting, one completed"
        case waitingTwoCompleted = "waiting, two completed"
        case failedSiblingRunning = "failed by a child, a sibling still running"
        case cancelledChildrenRunning = "cancelled, its children still running"
    }

    /// What happens to that running child.
    enum GraphChildEvent: String, CaseIterable, Sendable {
        case completed
        case failedForGood = "failed for good"
        case cancelled
        case failedWithAttemptsLeft = "failed with attempts left"
    }

    /// Every (parent state, child event) pair through the store's API, against
    /// `JobGraphStateMachine.next`: the parent's status, cancel request and tally after the
    /// child's end are the machine's, and its command reaches the other children.
    static func graphChildEvents(_ h: Harness) async throws {
        for state in GraphParentState.allCases {
            for event in GraphChildEvent.allCases {
                try await graphPair(h, state, event)
            }
        }
    }

    private static func graphPair(_ h: Harness, _ state: GraphParentState, _ event: GraphChildEvent) async throws {
        let pair = "\(state.rawValue) × \(event.rawValue)"
        let parent = try await h.submit("table \(pair)")
        let claimed = try await h.claim(parent.id)
        let requests = (0..<3).map { Harness.request("\(pair) child \($0)", maxAttempts: 2) }
        let ids = try #require(try await h.handle(1).fanOut(claimed.lease, children: requests))
        let running = try await h.handle(2).claim(as: Harness.workerB, limit: 3, lease: .seconds(30))
        let leases = Dictionary(uniqueKeysWithValues: running.map { ($0.job.id, $0.lease) })
        try #require(leases.count == 3, "\(pair): the children were not all claimed")
        let final = JobError(code: .decodeFailed, message: "damaged", retryable: false)

        // Bring the parent to `state`; `subject` is the running child the event happens to.
        var subject = ids[0]
        switch state {
        case .waitingNoneEnded:
            break
        case .waitingOneCompleted:
            _ = try await h.handle(0).complete(try #require(leases[ids[0]]), result: .null, tracks: [])
            subject = ids[1]
        case .waitingTwoCompleted:
            for id in ids.prefix(2) {
                _ = try await h.handle(0).complete(try #require(leases[id]), result: .null, tracks: [])
            }
            subject = ids[2]
        case .failedSiblingRunning:
            _ = try await h.handle(0).fail(try #require(leases[ids[0]]), error: final, retryDelay: .zero)
            subject = ids[1]
        case .cancelledChildrenRunning:
            _ = try await h.handle(0).cancel(parent.id)
        }
        let before = try await h.fetch(parent.id, on: 3)
        let children = try #require(before.children, "\(pair): no tally")
        let machine = JobGraphStateMachine.State(
            job: JobStateMachine.State(
                status: before.status,
                cancelRequested: before.cancelRequested,
                attempt: before.attempt,
                maxAttempts: before.maxAttempts
            ),
            phase: before.graphPhase,
            children: children
        )
        let lease = try #require(leases[subject])
        let childEvent: JobGraphStateMachine.Event?
        switch event {
        case .completed:
            _ = try await h.handle(1).complete(lease, result: .null, tracks: [])
            childEvent = .childCompleted
        case .failedForGood:
            _ = try await h.handle(1).fail(lease, error: final, retryDelay: .zero)
            childEvent = .childFailed
        case .cancelled:
            if try await h.fetch(subject).cancelRequested == false { _ = try await h.handle(2).cancel(subject) }
            _ = try await h.handle(1).confirmCancelled(lease)
            childEvent = .childCancelled
        case .failedWithAttemptsLeft:
            let again = JobError(code: .outputUnwritable, message: "disk full", retryable: true)
            _ = try await h.handle(1).fail(lease, error: again, retryDelay: .zero)
            // Queued again: not an end, nothing for the parent (unless the child was asked to
            // stop, its parent being over: the stop wins, and it ends cancelled).
            childEvent = JobGraphStateMachine.childEvent(for: try await h.fetch(subject).status)
        }
        let after = try await h.fetch(parent.id, on: 2)
        let predicted = childEvent.flatMap { JobGraphStateMachine.next(machine, on: $0) }
        let expected = predicted?.state ?? machine
        #expect(after.status == expected.job.status, "\(pair): status \(after.status), machine \(expected.job.status)")
        #expect(
            after.children == expected.children,
            "\(pair): \(String(describing: after.children)) vs \(expected.children)"
        )
        #expect(after.cancelRequested == expected.job.cancelRequested, "\(pair): cancel request")
        if predicted?.children == .cancelActive {
            // Every other child that had not ended is cancelled or asked to stop.
            for id in ids where id != subject {
                let child = try await h.fetch(id)
                #expect(
                    child.status.isTerminal || child.cancelRequested,
                    "\(pair): child \(child.childIndex ?? -1) neither ended nor asked to stop"
                )
            }
        }
        // Clean up: the other children end, so the next pair starts from an empty queue.
        for id in ids where id != subject || event == .failedWithAttemptsLeft {
            let child = try await h.fetch(id)
            if child.status == .reading, let lease = leases[id] {
                _ = try await h.handle(0).confirmCancelled(lease)
                _ = try await h.handle(0).fail(lease, error: final, retryDelay: .zero)
            } else if child.status == .unknown {
                _ = try? await h.handle(0).cancel(id)
            }
        }
        for job in try await h.handle(0).claim(as: Harness.workerB, limit: 10, lease: .seconds(30)) {
            _ = try await h.handle(0).fail(job.lease, error: final, retryDelay: .zero)
        }
    }
}
