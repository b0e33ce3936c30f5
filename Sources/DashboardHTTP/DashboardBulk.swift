import Dashboard
import Foundation
import Hummingbird
import JobAPI
import Queue

/// Bulk cancel and retry from the jobs page: on the jobs ticked, or on every job matching the
/// filter; always through a confirmation page that says how many jobs, and each job's action
/// audited like a single one.
extension DashboardRoutes {
    /// The most jobs one bulk action takes (the confirmation says when there are more).
    static let bulkLimit = 10_000
    /// The most jobs a selection names.
    static let selectionLimit = 500

    /// A bulk action (the session's key may act: `DashboardSessions`).
    func bulk(_ request: Request, _ session: Session) async throws -> Response {
        let fields = session.form
        let field = session.field
        guard let action = field("action"), ["cancel", "retry"].contains(action),
            let target = field("target"), ["selected", "matching"].contains(target)
        else { return refusal(session, "That form asked for nothing this dashboard does.", status: .badRequest) }
        let typed = field("q") ?? ""
        let owner = session.owner
        var ids: [JobID] = []
        if target == "selected" {
            let named = fields.filter { $0.0 == "id" }.map { JobID($0.1) }
            guard !named.isEmpty else {
                return Self.redirect(session.links.root + "?q=\(Self.queryEscaped(typed))&done=none-selected")
            }
            guard named.count <= Self.selectionLimit, named.allSatisfy(\.isWellFormed) else {
                return refusal(session, "A selection names at most \(Self.selectionLimit) jobs.", status: .badRequest)
            }
            var query = JobQuery(owner: owner, ids: named, limit: named.count)
            query.topLevelOnly = false
            ids = try await store.jobs(query).map(\.id)
        } else {
            let filter: JobFilterQuery
            do { filter = try JobFilterQuery(typed, now: now()) } catch {
                return refusal(session, "The filter does not parse: \(error.description)", status: .badRequest)
            }
            ids = try await matching(filter, owner: owner)
        }
        guard field("confirm") == "yes" else {
            let view = ConfirmView(
                frame: session.frame,
                csrf: session.row.csrfToken,
                action: action,
                target: target,
                q: typed,
                ids: ids,
                limited: ids.count >= Self.bulkLimit
            )
            return html(pages.render(view, as: "confirm"))
        }
        var (done, skipped) = (0, 0)
        for id in ids {
            let outcome: String
            do {
                if action == "cancel" {
                    _ = try await store.cancel(id)
                    outcome = "cancelled"
                } else {
                    _ = try await store.retry(id, force: false)
                    outcome = "retried"
                }
                done += 1
            } catch let error as JobStoreError where error.code == .conflict || error.code == .notFound {
                outcome = action == "cancel" ? "ended" : "not-retryable"
                skipped += 1
            }
            try await store.recordAudit(
                AuditRecord(at: now(), keyID: session.key.id, action: "bulk \(action)", jobID: id, outcome: outcome)
            )
        }
        logger.info(
            "Dashboard bulk action",
            metadata: [
                "key.id": "\(session.key.id)", "action": "\(action)", "done": "\(done)", "skipped": "\(skipped)",
            ]
        )
        return Self.redirect(
            session.links.root + "?q=\(Self.queryEscaped(typed))&done=bulk-\(action)&count=\(done)&skipped=\(skipped)"
        )
    }

    /// The ids of the jobs `filter` matches for `owner`, newest first, up to `bulkLimit`.
    private func matching(_ filter: JobFilterQuery, owner: String?) async throws -> [JobID] {
        var query = JobQuery(owner: owner, limit: 500)
        query.topLevelOnly = true
        query.conditions = filter.conditions
        var ids: [JobID] = []
        while ids.count < Self.bulkLimit {
            query.limit = min(500, Self.bulkLimit - ids.count)
            let page = try await store.jobs(query)
            ids += page.map(\.id)
            guard page.count == query.limit, let last = page.last else { break }
            query.after = JobQuery.Cursor(createdAt: last.createdAt.milliseconds, id: last.id)
        }
        return ids
    }

    /// What the jobs page says after a bulk action (numbers only from the URL).
    static func bulkFlash(_ parameters: [String: String]) -> String? {
        switch parameters["done"] {
        case "none-selected": return "No job was selected."
        case let done? where done.hasPrefix("bulk-"):
            let count = parameters["count"].flatMap(Int.init) ?? 0
            let skipped = parameters["skipped"].flatMap(Int.init) ?? 0
            let verb = done == "bulk-cancel" ? "Cancelled" : "Queued again"
            let why = done == "bulk-cancel" ? "had ended already" : "could not be retried"
            return "\(verb): \(count) job\(count == 1 ? "" : "s")."
                + (skipped > 0 ? " \(skipped) \(skipped == 1 ? "was" : "were") left alone: \(why)." : "")
        default: return nil
        }
    }
}
