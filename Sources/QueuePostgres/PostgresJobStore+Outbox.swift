import Foundation
import Logging
import PostgresNIO
import Queue

// The webhook outbox: events written with terminal statuses, claimed by dispatchers with a lease.
extension PostgresJobStore {
    // MARK: Webhook outbox

    /// Writes the event for a job that just reached a terminal status, if it has a webhook.
    func enqueueEvent(for id: JobID, _ connection: PostgresConnection, now: Int64) async throws {
        try await enqueueEvent(for: try await job(id, connection), connection, now: now)
    }

    /// Writes the event for `job` (as just read) if it has ended and has a webhook.
    func enqueueEvent(for job: Job, _ connection: PostgresConnection, now: Int64) async throws {
        let id = job.id
        guard job.status.isTerminal, let url = job.webhook else { return }
        let type = "job.\(job.status.rawValue)"
        let body = try Job.makeJSONEncoder(pretty: false).encode(
            WebhookPayload(type: type, timestamp: Date(milliseconds: now), data: job)
        )
        let deliveryID = "msg_" + JobID.make().rawValue.replacingOccurrences(of: "-", with: "")
        try await connection.query(
            """
            WITH added AS (
                INSERT INTO jobctl.webhook_deliveries (id, job_id, type, url, payload, status, next_attempt_at, created_at, updated_at)
                VALUES (\(deliveryID), \(id.rawValue), \(type), \(url), \(String(decoding: body, as: UTF8.self)), 'pending', \(now), \(now), \(now))
                RETURNING id
            )
            SELECT pg_notify('\(unescaped: Self.channel)', 'webhook') FROM added
            """,
            logger: logger
        )
    }

    public func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let due = try await withConnection { connection in
            for try await value in try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM jobctl.webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= \(unescaped: self.nowSQL))
                    OR EXISTS (SELECT 1 FROM jobctl.webhook_deliveries WHERE status = 'delivering' AND lease_expires_at <= \(unescaped: self.nowSQL))
                """,
                logger: self.logger
            ).decode(Bool.self) { return value }
            return false
        }
        guard due else { return [] }
        return try await transaction { connection in
            let now = try await self.currentTime(connection)
            let rows = try await connection.query(
                """
                UPDATE jobctl.webhook_deliveries SET status = 'delivering', lease_token = md5(random()::text || clock_timestamp()::text || id),
                    lease_expires_at = \(now + lease.milliseconds), dispatcher = \(dispatcher), updated_at = \(now)
                WHERE id IN (
                    SELECT id FROM jobctl.webhook_deliveries
                    WHERE (status = 'pending' AND next_attempt_at <= \(now)) OR (status = 'delivering' AND lease_expires_at <= \(now))
                    ORDER BY coalesce(next_attempt_at, created_at), created_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED
                )
                RETURNING \(unescaped: StoredColumns.delivery), payload, lease_token
                """,
                logger: self.logger
            )
            var claimed: [ClaimedDelivery] = []
            for try await row in rows {
                let access = row.makeRandomAccess()
                claimed.append(
                    ClaimedDelivery(
                        delivery: try Stored(access).delivery(log: []),
                        payload: Data(try access["payload"].decode(String.self).utf8),
                        leaseToken: try access["lease_token"].decode(String.self),
                        dispatcher: dispatcher
                    )
                )
            }
            return claimed.sorted(by: ClaimedDelivery.dueOrder)
        }
    }

    public func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            let (attempt, status, next, deliveredAt): (DeliveryAttempt, DeliveryStatus, Int64?, Int64?) =
                switch outcome {
                case .delivered(let attempt): (attempt, .delivered, nil, now)
                case .retry(let attempt, let delay): (attempt, .pending, now + delay.milliseconds, nil)
                case .failed(let attempt): (attempt, .failed, nil, nil)
                }
            var number: Int?
            for try await value in try await connection.query(
                """
                UPDATE jobctl.webhook_deliveries SET attempts = attempts + 1, status = \(status.rawValue), next_attempt_at = \(next),
                    delivered_at = \(deliveredAt), last_status_code = \(attempt.statusCode), last_error = \(attempt.error),
                    lease_token = NULL, lease_expires_at = NULL, updated_at = \(now)
                WHERE id = \(claimed.delivery.id) AND lease_token = \(claimed.leaseToken) AND status = 'delivering'
                RETURNING attempts
                """,
                logger: self.logger
            ).decode(Int.self) { number = value }
            guard let number else { return false }
            try await connection.query(
                """
                INSERT INTO jobctl.webhook_attempts (delivery_id, attempt, at, status_code, latency_ms, error, dispatcher)
                VALUES (\(claimed.delivery.id), \(number), \(attempt.at.milliseconds), \(attempt.statusCode), \(attempt.latency), \(attempt.error), \(attempt.dispatcher))
                """,
                logger: self.logger
            )
            if status == .pending { try await self.notify(connection, "webhook") }
            return true
        }
    }

    public func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery] {
        try await withConnection { connection in
            var deliveries: [WebhookDelivery] = []
            for try await row in try await connection.query(
                """
                SELECT \(unescaped: StoredColumns.delivery) FROM jobctl.webhook_deliveries WHERE \(job?.rawValue)::text IS NULL OR job_id = \(job?.rawValue)
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """,
                logger: self.logger
            ) { deliveries.append(try Stored(row.makeRandomAccess()).delivery(log: [])) }
            for index in deliveries.indices {
                deliveries[index].log = try await self.attempts(of: deliveries[index].id, connection)
            }
            return deliveries
        }
    }

    public func redeliver(_ id: String) async throws -> WebhookDelivery {
        try await transaction { connection in
            let now = try await self.currentTime(connection)
            var status: String?
            for try await value in try await connection.query(
                "SELECT status FROM jobctl.webhook_deliveries WHERE id = \(id) FOR UPDATE",
                logger: self.logger
            ).decode(String.self) { status = value }
            guard let status else { throw JobStoreError(.notFound, "no webhook delivery \(id)") }
            guard status != DeliveryStatus.delivering.rawValue else {
                throw JobStoreError(.conflict, "delivery \(id) is being sent right now", status: .reading)
            }
            try await connection.query(
                "UPDATE jobctl.webhook_deliveries SET status = 'pending', next_attempt_at = \(now), delivered_at = NULL, updated_at = \(now) WHERE id = \(id)",
                logger: self.logger
            )
            try await self.notify(connection, "webhook")
            for try await row in try await connection.query(
                "SELECT \(unescaped: StoredColumns.delivery) FROM jobctl.webhook_deliveries WHERE id = \(id)",
                logger: self.logger
            ) {
                return try Stored(row.makeRandomAccess()).delivery(log: try await self.attempts(of: id, connection))
            }
            throw JobStoreError(.notFound, "no webhook delivery \(id)")
        }
    }

    func attempts(of id: String, _ connection: PostgresConnection) async throws -> [DeliveryAttempt] {
        var attempts: [DeliveryAttempt] = []
        for try await (attempt, at, status, latency, error, dispatcher) in try await connection.query(
            "SELECT attempt, at, status_code, latency_ms, error, dispatcher FROM jobctl.webhook_attempts WHERE delivery_id = \(id) ORDER BY attempt",
            logger: logger
        ).decode((Int, Int64, Int?, Int, String?, String).self) {
            attempts.append(
                DeliveryAttempt(
                    attempt: attempt,
                    at: Date(milliseconds: at),
                    statusCode: status,
                    latency: latency,
                    error: error,
                    dispatcher: dispatcher
                )
            )
        }
        return attempts
    }
}
