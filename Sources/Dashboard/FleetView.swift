import Foundation
import Queue

/// The fleet page: the workers, and the last hour of the queue minute by minute.
public struct FleetView: Sendable {
    public let root: String
    public let signedIn: PageFrame.SignedIn?
    public let flash: String?
    public let refresh: Int = 10

    public let workers: [Worker]
    public let hasWorkers: Bool
    public let queued: String
    public let running: String
    public let oldestQueued: String
    public let throughputChart: String
    public let depthChart: String
    public let waitChart: String
    public let runChart: String
    public let recordedThrough: String

    public struct Worker: Sendable {
        public let name: String
        public let host: String
        public let version: String
        public let state: String
        public let heartbeatAge: String
        public let running: Int
        public let jobs: [String]
        /// Video frames per second over its running jobs (each averaged over its attempt), or
        /// "–" when none is writing frames.
        public let fps: String
    }

    /// `minutes`: the last hour's, oldest first, zero-filled (`MinuteSample.zeroFilled`).
    /// `runningJobs`: the jobs the workers run (their pace gives each worker's fps).
    public init(
        frame: PageFrame,
        workers: [WorkerInfo],
        runningJobs: [Job] = [],
        minutes: [MinuteSample],
        now: Date
    ) {
        let jobs = Dictionary(runningJobs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        root = frame.root
        signedIn = frame.signedIn
        flash = frame.flash
        // Running workers first, then by name.
        self.workers = workers.sorted {
            ($0.stoppedAt == nil ? 0 : 1, $0.name) < ($1.stoppedAt == nil ? 0 : 1, $1.name)
        }
        .map { worker in
            let age = max(0, now.timeIntervalSince(worker.heartbeatAt))
            return Worker(
                name: worker.name,
                host: worker.host,
                version: worker.version,
                state: worker.stoppedAt != nil ? "stopped" : age > Self.staleAfter ? "silent" : "live",
                heartbeatAge: Self.duration(age),
                running: worker.runningJobs.count,
                jobs: worker.runningJobs.prefix(5).map(\.rawValue),
                fps: Self.fps(worker.runningJobs.compactMap { jobs[$0] }, now: now)
            )
        }
        hasWorkers = !workers.isEmpty
        let latest = minutes.last { $0.queued != nil }
        queued = latest?.queued.map(String.init) ?? "–"
        running = latest?.running.map(String.init) ?? "–"
        oldestQueued = latest?.oldestQueuedMilliseconds.map { Self.duration(Double($0) / 1000) } ?? "–"
        recordedThrough =
            latest.map { DashboardText.short(Date(timeIntervalSince1970: Double($0.minute * 60))) } ?? "never"
        func values(_ path: (MinuteSample) -> Int?) -> [Double?] { minutes.map { path($0).map(Double.init) } }
        func seconds(_ path: (MinuteSample) -> Int64?) -> [Double?] {
            minutes.map { path($0).map { Double($0) / 1000 } }
        }
        throughputChart = SVGChart.bars(
            title: "Jobs ended per minute, last hour",
            unit: "jobs",
            [
                .init("completed", color: "#1a7f37", values(\.completed)),
                .init("failed", color: "#cf222e", values(\.failed)),
                .init("cancelled", color: "#8c959f", values(\.cancelled)),
            ]
        )
        depthChart = SVGChart.lines(
            title: "Queue depth, last hour",
            unit: "jobs",
            [
                .init("queued", color: "#9a6700", values(\.queued)),
                .init("running", color: "#0969da", values(\.running)),
            ]
        )
        waitChart = SVGChart.lines(
            title: "Wait before starting, last hour",
            unit: "s",
            [.init("p50", color: "#0969da", seconds(\.waitP50)), .init("p95", color: "#8250df", seconds(\.waitP95))]
        )
        runChart = SVGChart.lines(
            title: "Run time, last hour",
            unit: "s",
            [.init("p50", color: "#0969da", seconds(\.runP50)), .init("p95", color: "#8250df", seconds(\.runP95))]
        )
    }

    /// A worker whose heartbeat is older than this is shown as silent (its leases run out).
    static let staleAfter: TimeInterval = 60

    /// The frames per second of a worker's jobs together.
    static func fps(_ jobs: [Job], now: Date) -> String {
        let rates = jobs.compactMap { JobPace($0, now: now)?.framesPerSecond }
        return rates.isEmpty ? "–" : JobPace.fps(rates.reduce(0, +))
    }

    static func duration(_ seconds: Double) -> String {
        switch seconds {
        case ..<90: "\(Int(seconds)) s"
        case ..<5400: "\(Int(seconds / 60)) min"
        case ..<172_800: String(format: "%.1f h", seconds / 3600)
        default: String(format: "%.1f d", seconds / 86400)
        }
    }
}
