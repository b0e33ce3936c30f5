import Foundation
import Hummingbird
import Queue

/// `GET /v1/jobs/{id}/deliveries` (the job's webhook log, as `jobctl webhooks list --job`) and
/// `POST /v1/jobs/{id}/deliveries/{delivery}/redeliver` (as `jobctl webhooks redeliver`).
extension JobRoutes {
    /// A job has one event per outcome; a retried job a few more.
    package static let deliveriesPerJob = 100

    func deliveries(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.read, context)
        let (id, outbox) = try await visibleJob(key, context)
        struct Page: Encodable { let deliveries: [WebhookDelivery] }
        return try APIResponses.json(
            Page(deliveries: try await outbox.deliveries(job: id, limit: Self.deliveriesPerJob))
        )
    }

    func redeliver(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let (id, outbox) = try await visibleJob(key, context)
        let delivery = try context.parameters.require("delivery")
        // Only this job's deliveries: a delivery id names no tenant by itself.
        guard try await outbox.deliveries(job: id, limit: Self.deliveriesPerJob).contains(where: { $0.id == delivery })
        else {
            throw APIError(.deliveryNotFound, "job \(id) has no webhook delivery \(delivery.prefix(64))")
        }
        do {
            return try APIResponses.json(try await outbox.redeliver(delivery), status: .accepted)
        } catch let error as JobStoreError where error.code == .conflict {
            throw APIError(.deliveryInFlight, error.message)
        }
    }

    private func visibleJob(_ key: APIKey, _ context: APIRequestContext) async throws -> (JobID, any WebhookOutbox) {
        let id = try Self.jobID(context)
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        return (id, store)
    }
}
