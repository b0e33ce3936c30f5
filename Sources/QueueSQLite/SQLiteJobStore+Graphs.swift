import Foundation
import GRDB
import JobctlCore
import Queue

// Job graphs (issue 27): a parent's fan-out, its children's ends counted on it, its cancel and
// retry over its children; each step `JobGraphStateMachine`'s, in the transaction of the job's
// own transition.
extension SQLiteJobStore {
    public func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]? {
        if let error = JobStoreError.childCount(children.count) { throw error }
        let now = self.now
        let ids = JobID.makeAscending(children.count, at: clock())
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
                let child = request.child(of: lease.jobID, index: index, owner: parent["owner"])
                try SQLiteJobStore.insert(child, id: id, now: now, createdAt: parent["created_at"], db)
            }
            return ids
        }
    }

    /// A waiting parent's progress: its children's, weighted by the media each covers (its
    /// range's duration; 1 s for a child without one).
    static func refreshProgress(ofParent id: JobID, _ db: Database) throws {
        try db.execute(
            sql: """
                UPDATE jobs SET progress = (
                    SELECT COALESCE(SUM(progress * COALESCE(range_duration, 1.0)) / SUM(COALESCE(range_duration, 1.0)), 0)
                    FROM jobs WHERE parent_id = ?1
                ) WHERE id = ?1 AND status = 'reading' AND lease_token IS NULL
                """,
            arguments: [id.rawValue]
        )
    }

    /// A job's transition is written: its webhook event if it ended, and its end counted on its
    /// parent, in the same transaction.
    static func recorded(_ id: JobID, _ db: Database, now: Int64) throws {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT webhook IS NOT NULL AS hooked, parent_id, status, child_index, error_code, error_message,
                            error_retryable
                        FROM jobs WHERE id = ?
                        """
                ),
                arguments: [id.rawValue]
            )
        else { return }
        if row["hooked"] == true { try enqueueEvent(for: id, db, now: now) }
        let raw: String = row["status"]
        guard let parent: String = row["parent_id"], let status = JobStatus(rawValue: raw),
            let event = JobGraphStateMachine.childEvent(for: status)
        else { return }
        let error = (row["error_code"] as String?).map {
            JobError(
                code: ErrorCode(rawValue: $0),
                message: row["error_message"] ?? "",
                retryable: row["error_retryable"]
            )
        }
        try applyToParent(JobID(parent), event, child: (row["child_index"], error), db, now: now)
        try refreshProgress(ofParent: JobID(parent), db)
    }

    /// `event` applied to the parent `id` and, by its command, to its children. `false` when
    /// `id` is not a parent (in `phase`, when given) or the machine does not allow the event
    /// (nothing written).
    @discardableResult
    static func applyToParent(
        _ id: JobID,
        _ event: JobGraphStateMachine.Event,
        child: (index: Int?, error: JobError?)?,
        in phase: JobGraphStateMachine.Phase? = nil,
        _ db: Database,
        now: Int64
    ) throws -> Bool {
        guard
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT status, cancel_requested, attempt, max_attempts, attempt_budget, crashes, children_total,
                        children_completed, children_failed, children_cancelled
                    FROM jobs WHERE id = ? AND children_total > 0
                    """,
                arguments: [id.rawValue]
            ),
            let status = JobStatus(rawValue: row["status"] as String)
        else { return false }
        let children = JobGraphStateMachine.Children(
            total: row["children_total"],
            completed: row["children_completed"],
            failed: row["children_failed"],
            cancelled: row["children_cancelled"]
        )
        let state = JobGraphStateMachine.State(
            job: JobStateMachine.State(
                status: status,
                cancelRequested: row["cancel_requested"],
                attempt: row["attempt"],
                maxAttempts: row["max_attempts"],
                attemptBudget: row["attempt_budget"],
                crashes: row["crashes"]
            ),
            phase: children.completed == children.total ? .join : .waiting,
            children: children
        )
        guard phase == nil || state.phase == phase, let (next, command) = JobGraphStateMachine.next(state, on: event)
        else { return false }
        let ended = !status.isTerminal && next.job.status.isTerminal
        // Queued for its join, or waiting for its children again after a retry.
        let restarted = next.job.status == .unknown || (next.job.status == .reading && status != .reading)
        let error =
            ended && next.job.status == .failed
            ? JobGraphStateMachine.parentError(child: child?.index, child?.error) : nil
        try db.execute(
            sql: """
                UPDATE jobs SET status = :status, cancel_requested = :cancelRequested, attempt = :attempt,
                    max_attempts = :maxAttempts, crashes = :crashes, children_completed = :completed,
                    children_failed = :failed, children_cancelled = :cancelled,
                    run_at = CASE WHEN :restarted THEN :now ELSE run_at END,
                    finished_at = CASE WHEN :restarted THEN NULL WHEN :ended THEN :now ELSE finished_at END,
                    result = CASE WHEN :restarted THEN NULL ELSE result END,
                    progress = CASE WHEN :restarted THEN 0 ELSE progress END,
                    error_code = CASE WHEN :restarted THEN NULL WHEN :errorCode IS NOT NULL THEN :errorCode ELSE error_code END,
                    error_message = CASE WHEN :restarted THEN NULL WHEN :errorCode IS NOT NULL THEN :errorMessage
                        ELSE error_message END,
                    error_retryable = CASE WHEN :restarted THEN NULL WHEN :errorCode IS NOT NULL THEN 0
                        ELSE error_retryable END,
                    updated_at = :now
                WHERE id = :id
                """,
            arguments: [
                "status": next.job.status.rawValue, "cancelRequested": next.job.cancelRequested,
                "attempt": next.job.attempt, "maxAttempts": next.job.maxAttempts, "crashes": next.job.crashes,
                "completed": next.children.completed, "failed": next.children.failed,
                "cancelled": next.children.cancelled, "restarted": restarted, "ended": ended, "now": now,
                "errorCode": error?.code.rawValue, "errorMessage": error?.message, "id": id.rawValue,
            ]
        )
        if JobGraphStateMachine.listsOutputs(from: state, to: next, on: event) {
            // What its completed children left, before its webhook event reads the row.
            let children = try Row.fetchAll(
                db,
                sql: "SELECT \(StoredColumns.job) FROM jobs WHERE parent_id = ? AND status = 'completed'",
                arguments: [id.rawValue]
            ).map { try job($0, db) }
            try db.execute(
                sql: "UPDATE jobs SET result = ? WHERE id = ?",
                arguments: [
                    try JobGraphStateMachine.outputs(of: children).map { try StoredJSON.encode($0) }, id.rawValue,
                ]
            )
        }
        if ended { try enqueueEvent(for: id, db, now: now) }
        switch command {
        case .none: break
        case .cancelActive:
            // Queued children end now, each counted on the parent; running ones are asked to stop.
            let queued = try String.fetchAll(
                db,
                sql: """
                    UPDATE jobs SET status = 'cancelled', finished_at = :now, updated_at = :now
                    WHERE parent_id = :id AND status = 'unknown' RETURNING id
                    """,
                arguments: ["now": now, "id": id.rawValue]
            )
            for child in queued { try recorded(JobID(child), db, now: now) }
            try db.execute(
                sql: "UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE parent_id = ? AND status = 'reading'",
                arguments: [now, id.rawValue]
            )
        case .rerunUnfinished:
            // As a retry of each (`JobStateMachine`): its attempt budget again.
            try db.execute(
                sql: """
                    UPDATE jobs SET status = 'unknown', run_at = :now, max_attempts = attempt + attempt_budget, progress = 0,
                        result = NULL, crashes = 0, error_code = NULL, error_message = NULL, error_retryable = NULL,
                        cancel_requested = 0, finished_at = NULL, updated_at = :now
                    WHERE parent_id = :id AND status IN ('failed', 'cancelled')
                    """,
                arguments: ["now": now, "id": id.rawValue]
            )
        }
        return true
    }

    /// A retry of a parent whose children did not all complete: they run again (the machine's
    /// retry of a waiting parent). `nil` for any other job (a plain retry).
    static func retryWaitingParent(
        _ id: JobID,
        status: JobStatus,
        force: Bool,
        _ db: Database,
        now: Int64
    ) throws -> Job? {
        guard status.isTerminal,
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT children_total - children_completed - children_failed - children_cancelled AS active, crashes
                    FROM jobs WHERE id = ? AND children_total > 0 AND children_completed < children_total
                    """,
                arguments: [id.rawValue]
            )
        else { return nil }
        guard row["active"] == 0 else { throw JobStoreError.childrenStopping(id) }
        guard try applyToParent(id, .job(.retry(force: force)), child: nil, db, now: now) else {
            let crashes: Int = row["crashes"]
            if crashes >= JobStateMachine.crashLimit && status == .failed { throw JobStoreError.poisoned(id) }
            throw JobStoreError.notRetryable(id, status)
        }
        return try job(id, db)
    }
}
