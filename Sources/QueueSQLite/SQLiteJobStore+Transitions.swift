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
            try SQLiteJobStore.recorded(lease.jobID, db, now: now)
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
                try SQLiteJobStore.recorded(id, db, now: now)
                return .cancelled(try SQLiteJobStore.job(id, db))
            case .reading:
                // A parent waiting for its children ends at once, and they are cancelled.
                if try SQLiteJobStore.applyToParent(id, .job(.cancel), child: nil, in: .waiting, db, now: now) {
                    return .cancelled(try SQLiteJobStore.job(id, db))
                }
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
            if let parent = try String.fetchOne(
                db,
                sql: "SELECT parent_id FROM jobs WHERE id = ?",
                arguments: [id.rawValue]
            ) {
                throw JobStoreError.childRetry(id, parent: JobID(parent))
            }
            if let parent = try SQLiteJobStore.retryWaitingParent(id, status: status, force: force, db, now: now) {
                return parent
            }
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
