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

    /// How long a batch may be in the database before completions that arrive meanwhile are
    /// sent by another flusher: a connection that hangs then holds up one batch, not the
    /// worker (before batching, it held up one job).
    static let stallAfter = Duration.seconds(2)

    private struct State {
        var waiting: [Waiting] = []
        /// Flushers running, and when one last took a batch or finished one.
        var flushers = 0
        var progress = ContinuousClock.now
    }

    private let state = Mutex(State())

    /// Completions waiting for the next batch (tests).
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Completes through `commit`, with the completions waiting alongside. `commit` gets a
    /// batch and returns each one's outcome, in order.
    func complete(
        _ completion: Completion,
        commit: @escaping @Sendable ([Completion]) async -> [Result<Bool, any Error>]
    ) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state -> Bool in
                state.waiting.append(Waiting(completion: completion, continuation: continuation))
                let stalled = ContinuousClock.now - state.progress > Self.stallAfter
                guard state.flushers == 0 || stalled else { return false }
                state.flushers += 1
                state.progress = .now
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
                    state.flushers -= 1
                    return []
                }
                let taken = Array(state.waiting.prefix(Self.limit))
                state.waiting.removeFirst(taken.count)
                state.progress = .now
                return taken
            }
            guard !batch.isEmpty else { return }
            let outcomes = await commit(batch.map(\.completion))
            state.withLock { $0.progress = .now }
            for (waiting, outcome) in zip(batch, outcomes) { waiting.continuation.resume(with: outcome) }
        }
    }
}
