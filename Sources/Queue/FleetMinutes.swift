import Foundation

/// One minute of the queue, as the dashboard's fleet page charts it (issue 30): the jobs that
/// ended in it, and the queue as it stood when the minute was recorded. Kept per minute in the
/// job database (table `job_minutes`) for `retentionMinutes`, so the page reads 60 rows
/// for an hour instead of scanning the jobs.
public struct MinuteSample: Sendable, Hashable, Codable {
    /// Unix time in whole minutes.
    public var minute: Int64
    public var completed: Int
    public var failed: Int
    public var cancelled: Int
    /// Jobs queued and running when the minute was recorded; `nil` for a minute nobody recorded.
    public var queued: Int?
    public var running: Int?
    /// How long the oldest queued job had waited, in ms, when the minute was recorded.
    public var oldestQueuedMilliseconds: Int64?
    /// Of the jobs that ended in the minute and had started: time from submission to start,
    /// and from start to end, in ms.
    public var waitP50: Int64?
    public var waitP95: Int64?
    public var runP50: Int64?
    public var runP95: Int64?

    public init(
        minute: Int64,
        completed: Int = 0,
        failed: Int = 0,
        cancelled: Int = 0,
        queued: Int? = nil,
        running: Int? = nil,
        oldestQueuedMilliseconds: Int64? = nil,
        waitP50: Int64? = nil,
        waitP95: Int64? = nil,
        runP50: Int64? = nil,
        runP95: Int64? = nil
    ) {
        self.minute = minute
        self.completed = completed
        self.failed = failed
        self.cancelled = cancelled
        self.queued = queued
        self.running = running
        self.oldestQueuedMilliseconds = oldestQueuedMilliseconds
        self.waitP50 = waitP50
        self.waitP95 = waitP95
        self.runP50 = runP50
        self.runP95 = runP95
    }

    /// A job that ended in the minute: how it ended and its times (Unix ms).
    public struct Ended: Sendable, Hashable {
        public var status: JobStatus
        public var createdAt: Int64
        public var startedAt: Int64?
        public var finishedAt: Int64

        public init(status: JobStatus, createdAt: Int64, startedAt: Int64?, finishedAt: Int64) {
            self.status = status
            self.createdAt = createdAt
            self.startedAt = startedAt
            self.finishedAt = finishedAt
        }
    }

    /// The minute from the jobs that ended in it and the queue as it stands.
    public static func make(
        minute: Int64,
        ended: [Ended],
        queued: Int,
        running: Int,
        oldestQueuedAt: Int64?,
        now: Int64
    ) -> MinuteSample {
        let started = ended.filter { $0.startedAt != nil }
        let waits = started.map { $0.startedAt! - $0.createdAt }.sorted()
        let runs = started.map { $0.finishedAt - $0.startedAt! }.sorted()
        return MinuteSample(
            minute: minute,
            completed: ended.count { $0.status == .completed },
            failed: ended.count { $0.status == .failed },
            cancelled: ended.count { $0.status == .cancelled },
            queued: queued,
            running: running,
            oldestQueuedMilliseconds: oldestQueuedAt.map { max(0, now - $0) },
            waitP50: percentile(waits, 0.50),
            waitP95: percentile(waits, 0.95),
            runP50: percentile(runs, 0.50),
            runP95: percentile(runs, 0.95)
        )
    }

    /// The nearest-rank percentile of sorted values; `nil` for none.
    public static func percentile(_ sorted: [Int64], _ fraction: Double) -> Int64? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count, max(1, rank)) - 1]
    }

    /// Every minute from `first` through `last`: the recorded ones, and empty ones between
    /// (no jobs ended, the queue unknown).
    public static func zeroFilled(_ samples: [MinuteSample], from first: Int64, through last: Int64) -> [MinuteSample] {
        guard first <= last else { return [] }
        let byMinute = Dictionary(samples.map { ($0.minute, $0) }, uniquingKeysWith: { _, newer in newer })
        return (first...last).map { byMinute[$0] ?? MinuteSample(minute: $0) }
    }

    /// Minutes kept: two days (the page shows the last hour; a day and more stays to look back).
    public static let retentionMinutes: Int64 = 48 * 60

    /// The minute `date` falls in.
    public static func minute(of date: Date) -> Int64 { Int64((date.timeIntervalSince1970 / 60).rounded(.down)) }
}

/// Where the fleet page's minutes are kept: the job database.
public protocol FleetRecorder: Sendable {
    /// Records `minute` from the jobs table (the jobs that ended in it, and the queue as it is
    /// at `now`), replacing the row if there is one, and drops minutes older than `MinuteSample.retentionMinutes` before it.
    func recordMinute(_ minute: Int64, at now: Date) async throws
    /// The recorded minutes from `first` through `last`, oldest first (gaps where none was).
    func minutes(from first: Int64, through last: Int64) async throws -> [MinuteSample]
}
