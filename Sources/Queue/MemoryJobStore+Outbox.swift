import Foundation

/// An outbox row: the delivery as listed, and what only the store sees.
struct StoredDelivery {
    var delivery: WebhookDelivery
    var payload: Data
    var leaseToken: String?
    var leaseExpiresAt: Date?
}

extension MemoryJobStore {
    /// Writes the event for a job that just reached a terminal status, if it has a webhook.
    static func enqueueEvent(for job: Job, _ tables: inout Tables, now: Date) {
        guard job.status.isTerminal, let url = job.webhook else { return }
        let type = "job.\(job.status.rawValue)"
        // A job and its JSON encoder cannot fail to encode (no non-finite numbers reach a Job).
        let body =
            (try? Job.makeJSONEncoder(pretty: false).encode(WebhookPayload(type: type, timestamp: now, data: job)))
            ?? Data()
        let id = "msg_" + JobID.make().rawValue.replacingOccurrences(of: "-", with: "")
        let delivery = WebhookDelivery(
            id: id,
            jobID: job.id,
            type: type,
            url: url,
            status: .pending,
            attempts: 0,
            nextAttemptAt: now,
            createdAt: now,
            deliveredAt: nil,
            lastStatusCode: nil,
            lastError: nil,
            log: []
        )
        tables.deliveries[id] = StoredDelivery(delivery: delivery, payload: body)
    }

    public func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        let now = self.now
        return write { tables in
            // Due events by when they became due: pending ones at their next attempt, leased
            // ones when their dispatcher's lease ran out.
            let due: [(Date, StoredDelivery)] = tables.deliveries.values.compactMap { stored in
                switch stored.delivery.status {
                case .pending: stored.delivery.nextAttemptAt.flatMap { $0 <= now ? ($0, stored) : nil }
                case .delivering: stored.leaseExpiresAt.flatMap { $0 <= now ? ($0, stored) : nil }
                case .delivered, .failed: nil
                }
            }
            let chosen = due.sorted { ($0.0, $0.1.delivery.id) < ($1.0, $1.1.delivery.id) }.prefix(max(limit, 0))
            return chosen.map { _, stored in
                var stored = stored
                stored.delivery.status = .delivering
                stored.leaseToken = MemoryJobStore.token()
                stored.leaseExpiresAt = now.addingTimeInterval(Double(lease.milliseconds) / 1000)
                tables.deliveries[stored.delivery.id] = stored
                var listed = stored.delivery
                listed.log = []
                return ClaimedDelivery(
                    delivery: listed,
                    payload: stored.payload,
                    leaseToken: stored.leaseToken!,
                    dispatcher: dispatcher
                )
            }
            .sorted(by: ClaimedDelivery.dueOrder)
        }
    }

    public func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool {
        let now = self.now
        return write { tables in
            guard var stored = tables.deliveries[claimed.delivery.id], stored.delivery.status == .delivering,
                stored.leaseToken == claimed.leaseToken
            else { return false }
            let attempt: DeliveryAttempt
            switch outcome {
            case .delivered(let made):
                attempt = made
                stored.delivery.status = .delivered
                stored.delivery.nextAttemptAt = nil
                stored.delivery.deliveredAt = now
            case .retry(let made, let delay):
                attempt = made
                stored.delivery.status = .pending
                stored.delivery.nextAttemptAt = Date(milliseconds: now.milliseconds + delay.milliseconds)
                stored.delivery.deliveredAt = nil
            case .failed(let made):
                attempt = made
                stored.delivery.status = .failed
                stored.delivery.nextAttemptAt = nil
                stored.delivery.deliveredAt = nil
            }
            stored.delivery.attempts += 1
            stored.delivery.lastStatusCode = attempt.statusCode
            stored.delivery.lastError = attempt.error
            stored.leaseToken = nil
            stored.leaseExpiresAt = nil
            var logged = attempt
            logged.attempt = stored.delivery.attempts
            logged.at = Date(milliseconds: attempt.at.milliseconds)
            stored.delivery.log.append(logged)
            tables.deliveries[claimed.delivery.id] = stored
            return true
        }
    }

    public func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery] {
        read { tables in
            MemoryJobStore.newestFirst(
                tables.deliveries.values.map(\.delivery).filter { job == nil || $0.jobID == job },
                limit: limit
            ) {
                ($0.createdAt, $0.id)
            }
        }
    }

    public func redeliver(_ id: String) async throws -> WebhookDelivery {
        let now = self.now
        return try write { tables in
            guard var stored = tables.deliveries[id] else {
                throw JobStoreError(.notFound, "no webhook delivery \(id)")
            }
            guard stored.delivery.status != .delivering else {
                throw JobStoreError(.conflict, "delivery \(id) is being sent right now", status: .reading)
            }
            stored.delivery.status = .pending
            stored.delivery.nextAttemptAt = now
            stored.delivery.deliveredAt = nil
            tables.deliveries[id] = stored
            return stored.delivery
        }
    }
}
