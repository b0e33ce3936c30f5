import Foundation
import Synchronization

extension MemoryJobStore: FleetRecorder {
    public func recordMinute(_ minute: Int64, at now: Date) async throws {
        let jobs = read { tables in tables.jobs.values.map(\.job) }
        let range = (minute * 60_000)..<((minute + 1) * 60_000)
        let ended = jobs.compactMap { job -> MinuteSample.Ended? in
            guard let finished = job.finishedAt?.milliseconds, range.contains(finished) else { return nil }
            return MinuteSample.Ended(
                status: job.status,
                createdAt: job.createdAt.milliseconds,
                startedAt: job.startedAt?.milliseconds,
                finishedAt: finished
            )
        }
        let queued = jobs.filter { $0.status == .unknown }
        let sample = MinuteSample.make(
            minute: minute,
            ended: ended,
            queued: queued.count,
            running: jobs.count { $0.status == .reading },
            oldestQueuedAt: queued.map(\.createdAt.milliseconds).min(),
            now: now.milliseconds
        )
        dashboardTables.withLock { tables in
            tables.minutes[minute] = sample
            tables.minutes = tables.minutes.filter { $0.key >= minute - MinuteSample.retentionMinutes }
        }
    }

    public func minutes(from first: Int64, through last: Int64) async throws -> [MinuteSample] {
        dashboardTables.withLock { tables in
            tables.minutes.values.filter { (first...last).contains($0.minute) }.sorted { $0.minute < $1.minute }
        }
    }
}
