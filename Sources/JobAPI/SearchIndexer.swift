import Logging
import Queue
import ServiceLifecycle

/// Keeps the text search's index up to date behind the submissions (`indexSearchText`, on
/// SQLite; other stores have nothing to index): a batch every `interval`, and batch after
/// batch while there is a backlog (a database from before the index, a burst of submissions).
/// Every `jobctl serve` runs one; two take turns at the database's write lock, and a batch is
/// one transaction, so they never index a job twice.
public struct SearchIndexer: Service {
    let store: any DashboardStore
    let batch: Int
    let interval: Duration
    let logger: Logger

    /// A batch of 1,000 holds the database's write lock for about 10 ms: submissions wait no
    /// longer than that behind it.
    public init(store: any DashboardStore, batch: Int = 1000, interval: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.batch = batch
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let indexed = await self.indexBatch()
                // A full batch: more are waiting; a short pause lets submissions have the lock.
                try? await Task.sleep(for: indexed == self.batch ? .milliseconds(20) : self.interval)
            }
        }
    }

    /// One batch; how many jobs it indexed (0 after a failure, which is logged).
    package func indexBatch() async -> Int {
        do {
            return try await store.indexSearchText(limit: batch)
        } catch {
            logger.warning("Indexing jobs for the dashboard's search failed", metadata: ["error": "\(error)"])
            return 0
        }
    }
}
