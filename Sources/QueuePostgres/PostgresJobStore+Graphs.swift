import Foundation
import PostgresNIO
import Queue

// Job graphs (issue 27): a parent's fan-out, in one fenced transaction.
extension PostgresJobStore {
    public func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]? {
        if let error = JobStoreError.childCount(children.count) { throw error }
        let ids = try await transaction { connection -> [JobID]? in
            let now = try await self.currentTime(connection)
            // The parent waits, its attempt not counted, if the lease still holds and nobody
            // asked it to stop (JobGraphStateMachine's fan-out).
            let rows = try await connection.query(
                """
                UPDATE jobctl.jobs SET attempt = attempt - 1, crashes = 0, lease_token = NULL, lease_expires_at = NULL,
                    progress = 0, children_total = \(children.count), children_completed = 0, children_failed = 0,
                    children_cancelled = 0, updated_at = \(now)
                WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                    AND NOT cancel_requested AND children_total = 0
                RETURNING owner, created_at
                """,
                logger: self.logger
            )
            var parent: (owner: String?, createdAt: Int64)?
            for try await (owner, createdAt) in rows.decode((String?, Int64).self) { parent = (owner, createdAt) }
            guard let parent else { return nil }
            var ids: [JobID] = []
            for (index, request) in children.enumerated() {
                let id = JobID.make(at: Date(milliseconds: now))
                ids.append(id)
                try await connection.query(
                    """
                    INSERT INTO jobctl.jobs (id, kind, status, input, output, preset, preset_settings, format, range_start,
                        range_duration, priority, max_attempts, attempt_budget, run_at, webhook, metadata, idempotency_key,
                        owner, created_at, updated_at, parent_id, child_index)
                    VALUES (\(id.rawValue), \(request.kind.rawValue), 'unknown', \(request.input), \(request.output),
                        \(request.preset), \(try StoredJSON.encode(request.presetSettings)), \(request.format),
                        \(request.range?.start), \(request.range?.duration), \(request.priority), \(request.maxAttempts),
                        \(request.maxAttempts), \(now), NULL, \(try StoredJSON.encode(request.metadata)), NULL,
                        \(parent.owner), \(parent.createdAt), \(now), \(lease.jobID.rawValue), \(index))
                    """,
                    logger: self.logger
                )
            }
            return ids
        }
        if ids != nil { await notifyNow("job") }
        return ids
    }
}
