import Foundation
import JobKinds
import Queue
import Synchronization

/// One running attempt: its state machine (under a lock: events come from the work, the lease
/// monitor, the claim loop and the upload thread), its prepared job (an export, thumbnails…),
/// and its lease's local deadline. Actions the state machine returns are carried out by the
/// caller, outside the lock; the only one carried out here is cancelling the work, which any
/// event may ask for.
final class Execution: Sendable {
    let claimed: ClaimedJob
    let claimedAt = ContinuousClock.now
    let lease: Duration
    private let state: Mutex<(machine: AttemptStateMachine, prepared: (any PreparedJob)?)>
    /// When the lease may have expired, by this host's clock: a renewal's request time plus the
    /// lease, less a margin. The store decides expiry by its own clock, which starts counting
    /// after the request was sent, so this errs early.
    private let deadline: Mutex<ContinuousClock.Instant>

    init(_ claimed: ClaimedJob, lease: Duration, renewedAt: ContinuousClock.Instant) {
        self.claimed = claimed
        self.lease = lease
        state = Mutex((AttemptStateMachine(attempt: claimed.lease.attempt, maxAttempts: claimed.job.maxAttempts), nil))
        deadline = Mutex(renewedAt + lease - Execution.margin(lease))
    }

    private static func margin(_ lease: Duration) -> Duration { min(lease / 10, .seconds(1)) }

    /// Feeds the state machine one event; cancels the export when it says so and returns the
    /// other actions for the caller to carry out.
    func handle(_ event: (inout AttemptStateMachine) -> AttemptStateMachine.Action) -> AttemptStateMachine.Action {
        let (action, prepared) = state.withLock { state in (event(&state.machine), state.prepared) }
        if action == .cancelExport {
            prepared?.cancel()
            return .none
        }
        return action
    }

    /// Stops the attempt (the first reason wins; ignored once the outcome is being reported).
    func stop(_ reason: AttemptStateMachine.StopReason) {
        _ = handle { $0.stop(reason) }
    }

    /// A renewal sent at `sent` succeeded.
    func renewed(at sent: ContinuousClock.Instant) {
        deadline.withLock { $0 = max($0, sent + lease - Execution.margin(lease)) }
    }

    /// Whether the lease may have expired without a renewal (this process was frozen, or the
    /// store has not answered): nothing may be made visible on its strength any more.
    var leaseMayBeLost: Bool { ContinuousClock.now >= deadline.withLock { $0 } }

    /// What a transfer asks before each chunk: stop if the attempt was stopped, or if the lease
    /// may be lost (which stops the attempt).
    var shouldStopTransfer: Bool {
        if leaseMayBeLost { stop(.leaseLost) }
        return stopReason != nil
    }

    var stopReason: AttemptStateMachine.StopReason? { state.withLock { $0.machine.stopReason } }
    var prepared: (any PreparedJob)? { state.withLock { $0.prepared } }
    /// Whether the lease monitor should keep renewing: until the outcome is being reported.
    var isListening: Bool { state.withLock { $0.machine.isListening } }

    /// The job is prepared; an attempt stopped meanwhile cancels it at once.
    func attach(_ prepared: any PreparedJob) {
        let stopped = state.withLock { state -> Bool in
            state.prepared = prepared
            return state.machine.stopReason != nil
        }
        if stopped { prepared.cancel() }
    }
}

/// The attempts this worker is running.
final class RunningJobs: Sendable {
    private let executions = Mutex<[ObjectIdentifier: Execution]>([:])

    func add(_ execution: Execution) {
        WorkerMetrics.running(
            executions.withLock {
                $0[ObjectIdentifier(execution)] = execution
                return $0.count
            }
        )
    }

    func remove(_ execution: Execution) {
        WorkerMetrics.running(
            executions.withLock {
                _ = $0.removeValue(forKey: ObjectIdentifier(execution))
                return $0.count
            }
        )
    }

    var count: Int { executions.withLock { $0.count } }

    func handBackAll() {
        for execution in executions.withLock({ Array($0.values) }) { execution.stop(.handBack) }
    }

    var leases: [Lease] { executions.withLock { $0.values.map(\.claimed.lease) } }

    func stop(_ ids: Set<JobID>, reason: AttemptStateMachine.StopReason) {
        for execution in executions.withLock({ Array($0.values) }) where ids.contains(execution.claimed.job.id) {
            execution.stop(reason)
        }
    }
}
