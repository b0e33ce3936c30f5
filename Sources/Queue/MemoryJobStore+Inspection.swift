import Foundation
import JobctlCore

// A job seen from the queue: its place in line, its lease, the attempts that ended it badly.
extension MemoryJobStore {
    public func leaseExpiry(of job: JobID) async throws -> Date? {
        read { tables in tables.jobs[job].flatMap { $0.job.status == .reading ? $0.leaseExpiresAt : nil } }
    }

    public func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int {
        let ahead = read { tables in
            tables.jobs.values.map(\.job).filter {
                $0.status == .unknown && $0.runAt.milliseconds <= now.milliseconds && $0.id != job.id
                    && Job.claimOrder($0, job) && (owner == nil || $0.owner == owner)
            }
            .count
        }
        return min(ahead, limit)
    }

    public func attempts(of job: JobID) async throws -> [JobAttempt] {
        read { Array(($0.attempts[job] ?? []).prefix(100)) }
    }

    /// What the SQL stores' `job_attempt_ended` trigger records: each job that was running
    /// under a lease before a write and after it runs a later attempt, or has stopped without
    /// completing and without handing its attempt back (a release, a fan-out).
    static func noteEndedAttempts(_ running: [Job], _ tables: inout Tables, now: Date) {
        for before in running {
            guard let after = tables.jobs[before.id]?.job, after.attempt >= before.attempt,
                after.attempt > before.attempt || ![.reading, .completed].contains(after.status)
            else { continue }
            let takenOver = after.attempt != before.attempt
            tables.attempts[before.id, default: []].append(
                JobAttempt(
                    attempt: before.attempt,
                    worker: before.worker,
                    startedAt: before.startedAt,
                    endedAt: now,
                    outcome: takenOver ? JobAttempt.takenOver : after.status.rawValue,
                    errorCode: takenOver ? .leaseLost : after.error?.code,
                    errorMessage: takenOver
                        ? JobAttempt.takeoverMessage(from: before.worker, to: after.worker) : after.error?.message
                )
            )
        }
    }
}
