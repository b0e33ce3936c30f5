import Foundation
import Logging
import Metrics
import Queue
import ServiceLifecycle
import Synchronization

/// Polls the job table for its counts by status (`jobctl_jobs{status=…}`, and the queue depth
/// `jobctl_queue_depth`: jobs waiting to run), and remembers whether the database answered, for
/// the health endpoint. One query (`GROUP BY status`) per interval per worker process.
public final class QueueGauges: Service {
    private let store: any QueryableJobQueue
    private let interval: Duration
    private let logger: Logger
    private let lastAnswer = Mutex<(at: ContinuousClock.Instant?, error: String?)>((nil, nil))

    public init(store: any QueryableJobQueue, interval: Duration = .seconds(15), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.poll()
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    /// Whether the database answered within the last three intervals (and the last error, if any).
    public var database: (reachable: Bool, error: String?) {
        let (at, error) = lastAnswer.withLock { $0 }
        guard let at else { return (false, error ?? "not asked yet") }
        return (ContinuousClock.now - at < interval * 3, error)
    }

    func poll() async {
        do {
            let counts = try await store.statusCounts()
            for status in JobStatus.allCases {
                Gauge(label: "jobctl_jobs", dimensions: [("status", status.rawValue)]).record(counts[status] ?? 0)
            }
            Gauge(label: "jobctl_queue_depth").record(counts[.unknown] ?? 0)
            lastAnswer.withLock { $0 = (.now, nil) }
        } catch {
            // Stopping (shutdown, a server that could not start) is not a failure to report.
            if Task.isCancelled || "\(error)".contains("CancellationError") { return }
            lastAnswer.withLock { $0.error = "\(error)" }
            logger.warning("Counting jobs for metrics failed", metadata: ["error": "\(error)"])
        }
    }
}
