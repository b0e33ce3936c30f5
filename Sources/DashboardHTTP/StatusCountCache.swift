import Foundation
import Queue
import Synchronization

/// Status counts, the queue's (`nil`) or a tenant's, each read at most once per `lifetime` (a
/// page may refresh every second; a `COUNT` over a million jobs should not run that often).
final class StatusCountCache: Sendable {
    typealias Entry = (counts: [JobStatus: Int], at: Date, read: ContinuousClock.Instant)
    let lifetime: Duration
    private let cached = Mutex<[String: Entry]>([:])

    init(lifetime: Duration) { self.lifetime = lifetime }

    func read(
        owner: String?,
        _ fetch: () async throws -> [JobStatus: Int]
    ) async throws -> (counts: [JobStatus: Int], at: Date) {
        // "" for the queue: key ids are never empty.
        let name = owner ?? ""
        if let hit = cached.withLock({ $0[name] }), ContinuousClock.now - hit.read < lifetime {
            return (hit.counts, hit.at)
        }
        let counts = try await fetch()
        let entry = (counts: counts, at: Date(), read: ContinuousClock.now)
        cached.withLock { cached in
            // Entries past their lifetime go as new ones come: one per key that looked lately.
            cached = cached.filter { entry.read - $0.value.read < lifetime }
            cached[name] = entry
        }
        return (counts, entry.at)
    }
}
