import Queue
import Synchronization

/// Concurrent completions of one store, committed together: while one batch is in the
/// database, the completions that arrive form the next, so a busy worker pays one statement
/// and one commit (one WAL flush) for many jobs instead of one each. Each caller gets its own
/// outcome: a completion is fenced by its own lease token in the batch's statement.
///
/// Nothing waits for a batch to fill: a lone completion is sent at once, as before.
final class CompletionBatch: Sendable {
    struct Completion: Sendable {
        let lease: Lease
        /// The result and the tracks, as the JSON text stored.
        let result: String
        let tracks: String
    }

    private struct Waiting: Sendable {
        let completion: Completion
        let continuation: CheckedContinuation<Bool, any Error>
    }

    /// The most completions in one statement (its arrays are bound parameters).
    static let limit = 256

    private let state = Mutex<(waiting: [Waiting], flushing: Bool)>(([], false))

    /// Completes through `commit`, with the completions waiting alongside. `commit` gets a
    /// batch and returns each one's outcome, in order.
    func complete(
        _ completion: Completion,
        commit: @escaping @Sendable ([Completion]) async -> [Result<Bool, any Error>]
    ) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiting.append(Waiting(completion: completion, continuation: continuation))
                guard !state.flushing else { return false }
                state.flushing = true
                return true
            }
            if start { Task { await self.flush(commit) } }
        }
    }

    /// Commits batches until none is waiting.
    private func flush(_ commit: @Sendable ([Completion]) async -> [Result<Bool, any Error>]) async {
        while true {
            let batch = state.withLock { state -> [Waiting] in
                guard !state.waiting.isEmpty else {
                    state.flushing = false
                    return []
                }
                let taken = Array(state.waiting.prefix(Self.limit))
                state.waiting.removeFirst(taken.count)
                return taken
            }
            guard !batch.isEmpty else { return }
            let outcomes = await commit(batch.map(\.completion))
            for (waiting, outcome) in zip(batch, outcomes) { waiting.continuation.resume(with: outcome) }
        }
    }
}
