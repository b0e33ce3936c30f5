import Dashboard
import Foundation
import Hummingbird
import JobAPI
import JobctlCore
import Queue

/// A job's webhook deliveries on its page, and redelivering one (as `jobctl webhooks redeliver`).
extension DashboardRoutes {
    /// Sends a delivery again (the session's key may act: `DashboardSessions`).
    func redeliver(_ context: DashboardRequestContext, _ session: Session) async throws -> Response {
        guard let id = try? JobRoutes.jobID(context), let job = try await store.job(id),
            JobRoutes.visible(job, to: session.key), let delivery = context.parameters.get("delivery"),
            try await store.deliveries(job: id, limit: JobRoutes.deliveriesPerJob).contains(where: { $0.id == delivery }
            )
        else {
            return refusal(session, "There is no such webhook delivery of a job of yours.", status: .notFound)
        }
        let done: String
        do {
            _ = try await store.redeliver(delivery)
            done = "redelivered"
        } catch let error as JobStoreError where error.code == .conflict {
            done = "delivering"
        }
        try await store.recordAudit(
            AuditRecord(at: now(), keyID: session.key.id, action: "redeliver", jobID: id, outcome: done)
        )
        return Self.redirect(session.links.job(id.rawValue) + "?done=\(done)")
    }
}

extension JobView.Delivery {
    /// A delivery as the page shows it: the URL without credentials or query, the last
    /// attempt's status, latency and error (cut short).
    init(_ delivery: WebhookDelivery, job: JobID, links: DashboardLinks, canRedeliver: Bool) {
        let last = delivery.log.last
        self.init(
            id: delivery.id,
            type: delivery.type,
            url: MediaLocation.displayed(delivery.url),
            status: delivery.status.rawValue,
            attempts: delivery.attempts,
            response: delivery.lastStatusCode.map { "HTTP \($0)" } ?? last?.error.map { String($0.prefix(200)) } ?? "",
            latency: last.map { "\($0.latency) ms" } ?? "",
            redeliver: canRedeliver && delivery.status != .delivering
                ? links.job(job.rawValue, "deliveries/\(DashboardText.urlEscaped(delivery.id))/redeliver") : nil
        )
    }
}
