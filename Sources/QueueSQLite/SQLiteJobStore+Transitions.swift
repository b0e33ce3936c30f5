import Foundation
import GRDB
import Queue

// The ends of an attempt (complete, fail, confirm a cancel, release) and the user's cancel and retry:
// each the SQL of one row of JobStateMachine's table, fenced by the lease token.
extension SQLiteJobStore {
    public func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool {
        try await finish(
            lease,
            tracks: tracks,
            sql: """
                status = 'completed', progress = 1, result = :result, error_code = NULL, error_message = NULL, error_retryable = NULL,
                finished_at = :now, crashes = 0
                """,
            arguments: ["result": try StoredJSON.encode(result)]
        )
    }

    public func fail(_ lease: Lease, error: JobError, retryDelay: Duration) async throws -> Bool {
        // A retryable failure of a job whose cancellation was asked for ends it cancelled.
        try await finish(
            lease,
            tracks: nil,
            sql: """
                status = CASE WHEN :retryable AND cancel_requested = 1 THEN 'cancelled'
                    WHEN :retryable AND attempt < max_attempts THEN 'unknown' ELSE 'failed' END,
                run_at = CASE WHEN :retryable AND attempt < max_attempts THEN :now + :delay ELSE run_at END,
                finished_at = CASE WHEN :retryable AND cancel_requested = 0 AND attempt < max_attempts THEN NULL ELSE :now END,
                error_code = :code, error_message = :message, error_retryable = :retryable
                """,
            arguments: [
                "retryable": error.retryable, "delay": retryDelay.milliseconds, "code": error.code.rawValue,
                "message": error.message,
            ]
        )
    }

    public func confirmCancelled(_ lease: Lease) async throws -> Bool {
        try await finish(
            lease,
            tracks: nil,
            sql: "status = 'cancelled', finished_at = :now, crashes = 0",
            arguments: [:]
        )
    }

    public func release(_ lease: Lease) async throws -> Bool {
        // Handing back a job whose cancellation was asked for ends it cancelled.
        try await finish(
            lease,
            tracks: nil,
            sql: """
                status = CASE WHEN cancel_requested = 1 THEN 'cancelled' ELSE 'unknown' END,
                finished_at = CASE WHEN cancel_requested = 1 THEN :now ELSE NULL END,
                attempt = CASE WHEN cancel_requested = 1 THEN attempt ELSE attempt - 1 END, run_at = :now, progress = 0,
                crashes = 0
                """,
            arguments: [:]
        )
    }

    public func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]? {
        if let error = JobStoreError.childCount(children.count) { throw error }
        let now = self.now
        let ids = children.map { _ in JobID.make(at: clock()) }
        return try await write { db -> [JobID]? in
            // The parent waits, its attempt not counted, if the lease still holds and nobody
            // asked it to stop (JobGraphStateMachine's fan-out).
            try db.execute(
                sql: """
                    UPDATE jobs SET attempt = attempt - 1, crashes = 0, lease_token = NULL, lease_expires_at = NULL,
                        progress = 0, children_total = ?, children_completed = 0, children_failed = 0,
                        children_cancelled = 0, updated_at = ?
                    WHERE id = ? AND lease_token = ? AND status = 'reading' AND cancel_requested = 0
                        AND children_total = 0
                    """,
                arguments: [children.count, now, lease.jobID.rawValue, lease.token]
            )
            guard db.changesCount == 1,
                let parent = try Row.fetchOne(
                    db,
                    sql: "SELECT owner, created_at FROM jobs WHERE id = ?",
                    arguments: [lease.jobID.rawValue]
                )
            else { return nil }
            for (index, (request, id)) in zip(children, ids).enumerated() {
                var request = request
                (request.parent, request.childIndex, request.owner) = (lease.jobID, index, parent["owner"])
                (request.webhook, request.idempotencyKey) = (nil, nil)
                try SQLiteJobStore.insert(request, id: id, now: now, createdAt: parent["created_at"], db)
            }
            return ids
        }
    }

    /// Ends the current attempt with `sql`'s assignments, if `lease` still holds it.
    func finish(
        _ lease: Lease,
        tracks: [JobTrack]?,
        sql assignments: String,
        arguments: StatementArguments
    ) async throws -> Bool {
        let now = self.now
        var merged = arguments
        _ = merged.append(contentsOf: ["now": now, "id": lease.jobID.rawValue, "token": lease.token])
        let all = merged
        return try await write { db in
            try db.run(
                sql: """
                    UPDATE jobs SET \(assignments), lease_token = NULL, lease_expires_at = NULL, cancel_requested = 0,
                        updated_at = :now
                    WHERE id = :id AND lease_token = :token AND status = 'reading'
                    """,
                arguments: all
            )
            guard db.changesCount == 1 else { return false }
            if let tracks { try SQLiteJobStore.replaceTracks(tracks, of: lease.jobID, db) }
            try SQLiteJobStore.enqueueEvent(for: lease.jobID, db, now: now)
            return true
        }
    }

    // MARK: Cancel and retry

    public func cancel(_ id: JobID) async throws -> CancelOutcome {
        let now = self.now
        return try await write { db in
            let status = try SQLiteJobStore.status(of: id, db)
            switch status {
            case .unknown:
                try db.execute(
                    sql: "UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ? WHERE id = ?",
                    arguments: [now, now, id.rawValue]
                )
                try SQLiteJobStore.enqueueEvent(for: id, db, now: now)
                return .cancelled(try SQLiteJobStore.job(id, db))
            case .reading:
                try db.execute(
                    sql: "UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?",
                    arguments: [now, id.rawValue]
                )
                return .requested(try SQLiteJobStore.job(id, db))
            case .completed, .failed, .cancelled:
                throw JobStoreError.alreadyEnded(id, status)
            }
        }
    }

    public func retry(_ id: JobID, force: Bool) async throws -> Job {
        let now = self.now
        return try await write { db in
            let status = try SQLiteJobStore.status(of: id, db)
            let crashes =
                try Int.fetchOne(db, sql: "SELECT crashes FROM jobs WHERE id = ?", arguments: [id.rawValue]) ?? 0
            let state = JobStateMachine.State(status: status, attempt: 0, maxAttempts: 1, crashes: crashes)
            guard JobStateMachine.next(state, on: .retry(force: force))?.status == .unknown else {
                if state.isPoisoned && status == .failed { throw JobStoreError.poisoned(id) }
                throw JobStoreError.notRetryable(id, status)
            }
            try db.execute(
                sql: """
                    UPDATE jobs SET status = 'unknown', run_at = ?, max_attempts = attempt + attempt_budget, progress = 0, result = NULL, crashes = 0,
                        error_code = NULL, error_message = NULL, error_retryable = NULL, cancel_requested = 0, finished_at = NULL, updated_at = ?
                    WHERE id = ?
                    """,
                arguments: [now, now, id.rawValue]
            )
            return try SQLiteJobStore.job(id, db)
        }
    }
}
