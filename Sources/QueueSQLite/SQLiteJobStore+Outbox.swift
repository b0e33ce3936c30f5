import Foundation
import GRDB
import Queue

// The webhook outbox: events written with terminal statuses, claimed by dispatchers with a lease.
extension SQLiteJobStore {
    // MARK: Webhook outbox

    /// Writes the event for a job that just reached a terminal status, if it has a webhook: the
    /// body is serialized here, once, and every attempt sends exactly these bytes.
    static func enqueueEvent(for id: JobID, _ db: Database, now: Int64) throws {
        // Most jobs have no webhook: one indexed lookup, no job read.
        guard
            try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT webhook IS NOT NULL FROM jobs WHERE id = ?"),
                arguments: [id.rawValue]
            ) == true
        else { return }
        let job = try job(id, db)
        guard job.status.isTerminal, let url = job.webhook else { return }
        let type = "job.\(job.status.rawValue)"
        let body = try Job.makeJSONEncoder(pretty: false).encode(
            WebhookPayload(type: type, timestamp: Date(milliseconds: now), data: job)
        )
        try db.run(
            sql: """
                INSERT INTO webhook_deliveries (id, job_id, type, url, payload, status, next_attempt_at, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)
                """,
            arguments: [
                "msg_" + JobID.make().rawValue.replacingOccurrences(of: "-", with: ""), id.rawValue, type, url,
                String(decoding: body, as: UTF8.self), now, now, now,
            ]
        )
    }

    public func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let now = self.now
        let due = try await anyDue(
            """
            SELECT EXISTS (SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_due WHERE status = 'pending' AND next_attempt_at <= :now)
                OR EXISTS (SELECT 1 FROM webhook_deliveries INDEXED BY webhook_deliveries_leased WHERE status = 'delivering' AND lease_expires_at <= :now)
            """,
            now: now
        )
        guard due else { return [] }
        return try await write { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE webhook_deliveries SET status = 'delivering', lease_token = lower(hex(randomblob(16))), lease_expires_at = :expires,
                            dispatcher = :dispatcher, updated_at = :now
                        WHERE id IN (
                            SELECT id FROM (
                                SELECT * FROM (SELECT id, next_attempt_at AS due FROM webhook_deliveries INDEXED BY webhook_deliveries_due
                                    WHERE status = 'pending' AND next_attempt_at <= :now ORDER BY next_attempt_at LIMIT :limit)
                                UNION ALL
                                SELECT * FROM (SELECT id, lease_expires_at AS due FROM webhook_deliveries INDEXED BY webhook_deliveries_leased
                                    WHERE status = 'delivering' AND lease_expires_at <= :now ORDER BY lease_expires_at LIMIT :limit)
                            ) ORDER BY due LIMIT :limit
                        )
                        RETURNING \(StoredColumns.delivery), payload, lease_token
                        """
                ),
                arguments: ["expires": now + lease.milliseconds, "dispatcher": dispatcher, "now": now, "limit": limit]
            )
            let columns = rows.first.map(Stored.Columns.init)
            return try rows.map { row in
                ClaimedDelivery(
                    delivery: try Stored(row, columns: columns).delivery(log: []),
                    payload: Data((row["payload"] as String).utf8),
                    leaseToken: row["lease_token"],
                    dispatcher: dispatcher
                )
            }
            // RETURNING gives rows in no particular order: longest due first.
            .sorted(by: ClaimedDelivery.dueOrder)
        }
    }

    public func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool {
        let now = self.now
        let (attempt, status, next, deliveredAt): (DeliveryAttempt, DeliveryStatus, Int64?, Int64?) =
            switch outcome {
            case .delivered(let attempt): (attempt, .delivered, nil, now)
            case .retry(let attempt, let delay): (attempt, .pending, now + delay.milliseconds, nil)
            case .failed(let attempt): (attempt, .failed, nil, nil)
            }
        return try await write { db in
            let number = try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        UPDATE webhook_deliveries SET attempts = attempts + 1, status = ?, next_attempt_at = ?, delivered_at = ?,
                            last_status_code = ?, last_error = ?, lease_token = NULL, lease_expires_at = NULL, updated_at = ?
                        WHERE id = ? AND lease_token = ? AND status = 'delivering'
                        RETURNING attempts
                        """
                ),
                arguments: [
                    status.rawValue, next, deliveredAt, attempt.statusCode, attempt.error, now, claimed.delivery.id,
                    claimed.leaseToken,
                ]
            )
            guard let number else { return false }
            try db.run(
                sql:
                    "INSERT INTO webhook_attempts (delivery_id, attempt, at, status_code, latency_ms, error, dispatcher) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    claimed.delivery.id, number, attempt.at.milliseconds, attempt.statusCode, attempt.latency,
                    attempt.error, attempt.dispatcher,
                ]
            )
            return true
        }
    }

    public func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery] {
        try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql:
                    "SELECT \(StoredColumns.delivery) FROM webhook_deliveries WHERE ?1 IS NULL OR job_id = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2",
                arguments: [job?.rawValue, limit]
            )
            let columns = rows.first.map(Stored.Columns.init)
            return try rows.map {
                try Stored($0, columns: columns).delivery(log: SQLiteJobStore.attempts(of: $0["id"], db))
            }
        }
    }

    public func redeliver(_ id: String) async throws -> WebhookDelivery {
        let now = self.now
        return try await write { db in
            guard
                let status = try String.fetchOne(
                    db,
                    sql: "SELECT status FROM webhook_deliveries WHERE id = ?",
                    arguments: [id]
                )
            else {
                throw JobStoreError(.notFound, "no webhook delivery \(id)")
            }
            guard status != DeliveryStatus.delivering.rawValue else {
                throw JobStoreError(.conflict, "delivery \(id) is being sent right now", status: .reading)
            }
            try db.execute(
                sql:
                    "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, delivered_at = NULL, updated_at = ? WHERE id = ?",
                arguments: [now, now, id]
            )
            let row = try Row.fetchOne(
                db,
                sql: "SELECT \(StoredColumns.delivery) FROM webhook_deliveries WHERE id = ?",
                arguments: [id]
            )!
            return try Stored(row).delivery(log: SQLiteJobStore.attempts(of: id, db))
        }
    }

    static func attempts(of id: String, _ db: Database) throws -> [DeliveryAttempt] {
        try Row.fetchAll(
            db,
            sql:
                "SELECT attempt, at, status_code, latency_ms, error, dispatcher FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt",
            arguments: [id]
        )
        .map { row in
            DeliveryAttempt(
                attempt: row["attempt"],
                at: Date(milliseconds: row["at"]),
                statusCode: row["status_code"],
                latency: row["latency_ms"],
                error: row["error"],
                dispatcher: row["dispatcher"]
            )
        }
    }
}
