import Foundation
import GRDB
import Synchronization

/// Commits concurrent writes together: each write runs in its own savepoint inside one
/// `IMMEDIATE` transaction, so a burst of N completions from a busy worker costs one commit
/// (one fsync) instead of N, with the same durability. A write that fails rolls back its own
/// savepoint only. Writes arriving while a transaction is committing form the next batch.
final class GroupCommit: Sendable {
    private struct Pending: Sendable {
        /// Runs the write in a savepoint and keeps its outcome.
        let run: @Sendable (Database) -> Void
        /// Delivers the outcome once the transaction committed (or the commit's error).
        let finish: @Sendable ((any Error)?) -> Void
    }

    private let pool: DatabasePool
    private let queue = DispatchQueue(label: "jobctl.sqlite.group-commit")
    private let state = Mutex<(pending: [Pending], flushing: Bool)>(([], false))

    private let turns: HostWriteLock

    init(pool: DatabasePool, turns: HostWriteLock) {
        self.pool = pool
        self.turns = turns
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let outcome = Mutex<Result<T, any Error>?>(nil)
            let pending = Pending(
                run: { db in
                    let result = Result { () throws -> T in
                        var value: T?
                        try db.inSavepoint {
                            value = try body(db)
                            return .commit
                        }
                        return value!
                    }
                    outcome.withLock { $0 = result }
                },
                finish: { commitError in
                    if let commitError {
                        continuation.resume(throwing: commitError)
                    } else {
                        continuation.resume(with: outcome.withLock { $0 } ?? .failure(CancellationError()))
                    }
                }
            )
            let start = state.withLock { state -> Bool in
                state.pending.append(pending)
                guard !state.flushing else { return false }
                state.flushing = true
                return true
            }
            if start { queue.async { self.flush() } }
        }
    }

    /// Commits batches until nothing is waiting. A batch is taken once the transaction holds
    /// the write lock, not before: writes that arrive while it waits for another process to
    /// let go of the lock join it (4 worker processes: 8 jobs per commit became many more).
    /// Each transaction waits for this process's turn among the host's writers first.
    private func flush() {
        while true {
            let more = state.withLock { state -> Bool in
                if state.pending.isEmpty { state.flushing = false }
                return !state.pending.isEmpty
            }
            guard more else { return }
            var batch: [Pending] = []
            var failure: (any Error)?
            let hasTurn = turns.acquire()
            do {
                try pool.write { db in
                    batch = state.withLock { state in
                        defer { state.pending = [] }
                        return state.pending
                    }
                    for pending in batch { pending.run(db) }
                }
            } catch {
                failure = error
            }
            if hasTurn { turns.release() }
            if failure != nil && batch.isEmpty {
                // The transaction could not begin: what waits would have been its batch.
                batch = state.withLock { state in
                    defer { state.pending = [] }
                    return state.pending
                }
            }
            for pending in batch { pending.finish(failure) }
        }
    }
}
