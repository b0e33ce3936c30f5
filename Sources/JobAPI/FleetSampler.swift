import Foundation
import Logging
import Queue
import ServiceLifecycle

/// Records the queue minute by minute for the dashboard's fleet page (`FleetRecorder`): every
/// `interval` the current minute again (so the page is at most that late), and the minute that
/// just ended once more with its final counts. Every `jobctl serve` runs one; recording a minute
/// twice replaces it, so several servers agree.
public struct FleetSampler: Service {
    let store: any FleetRecorder
    let interval: Duration
    let logger: Logger
    let now: @Sendable () -> Date

    public init(
        store: any FleetRecorder,
        interval: Duration = .seconds(10),
        logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.interval = interval
        self.logger = logger
        self.now = now
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var recorded: Int64?
            while !Task.isCancelled {
                recorded = await self.record(after: recorded)
                try? await Task.sleep(for: self.interval)
            }
        }
    }

    /// Records the current minute (and the one `recorded` last, if it has ended); returns the
    /// current minute.
    package func record(after recorded: Int64?) async -> Int64? {
        let date = now()
        let minute = MinuteSample.minute(of: date)
        do {
            if let recorded, recorded < minute { try await store.recordMinute(recorded, at: date) }
            try await store.recordMinute(minute, at: date)
            return minute
        } catch {
            logger.warning("Recording the queue's minute failed", metadata: ["error": "\(error)"])
            return recorded
        }
    }
}
