import Dashboard
import Foundation
import Hummingbird
import JobAPI
import NIOCore
import Queue
import ServiceLifecycle
import Synchronization

/// `GET /ui/events?watch=ID.TOKEN+ID.TOKEN&listing=1&newest=ID`: what keeps a dashboard page
/// live, as Server-Sent Events over the server's one `JobWatch` (the API's event streams
/// share it).
///
/// - `event: change` with a job id as its data, when a watched job's status, attempt, worker,
///   cancel request or whole percent is not what the page has seen (its `LiveVersion` token),
///   or the job is gone. The tokens come from the page, so a change between its render and
///   the stream's start is told at once.
/// - With `listing=1` (the jobs page), also when the key's newest job is not `newest`: a
///   submission that may belong on the page. A store notification wakes the check (a submit
///   on PostgreSQL, any write on SQLite); it reads one row, through an index, at most twice a
///   second per stream however busy the store is.
///
/// The page fetches its live part again on an event; nothing in an event but an id the key
/// may see. Only jobs the session's key may see are watched (others are dropped unanswered),
/// at most `JobWatch.pageLimit`. A stream takes one of the key's watches
/// (`--max-watches-per-key`) per job it watches, lasts `maximumStream` like the API's, ends
/// within `sessionCheckInterval` of its session ending (signed out, expired, the key revoked),
/// and answers 401 without a session, which stops the browser's `EventSource` rather than
/// making it retry.
extension DashboardRoutes {
    func events(_ request: Request, _ context: DashboardRequestContext, _ session: Session) async throws -> Response {
        let parameters = request.uri.queryParameters
        let listing = parameters.get("listing") == "1"
        // `ID.TOKEN` per job: the page's tokens (`LiveVersion`), kept while they are the same.
        var asked: [JobID: String] = [:]
        for entry in (parameters.get("watch") ?? "").split(whereSeparator: { $0 == " " || $0 == "," || $0 == "+" })
            .prefix(JobWatch.pageLimit)
        {
            // `.` or `..` alone has no parts: skipped, as any entry that is not an id.
            let parts = entry.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
            guard let first = parts.first else { continue }
            let id = JobID(String(first))
            if id.isWellFormed { asked[id] = parts.count > 1 ? String(parts[1]) : "" }
        }
        let key = session.key
        let owner = session.owner
        var watched: [JobID: String] = [:]
        if !asked.isEmpty {
            for job in try await store.jobs(JobQuery(owner: owner, ids: Array(asked.keys), limit: asked.count))
            where JobRoutes.visible(job, to: key) {
                watched[job.id] = asked[job.id]
            }
        }
        // The page's newest job, checked at the first update whatever the notifications say.
        let newest = parameters.get("newest").map { JobID(String($0)) }
        guard let subscription = watch.watchPage(Array(watched.keys), owner: key.id, until: .now + maximumStream) else {
            return Response(status: .tooManyRequests, headers: [.retryAfter: "30"])
        }
        let end = PageStreamEnd(subscription)
        let sessionHash = session.row.idHash
        context.connectionClosed?.whenComplete { [weak end] _ in end?.subscription.finish() }
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no",
        ]
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { [watched, newest, end] writer in
                defer { end.subscription.finish() }
                var watched = watched
                var newest = newest
                // Checked at the first update whatever the notifications say, then after them.
                var checkNewest = listing
                var lastCheck = ContinuousClock.now - Self.newestCheckInterval
                var sessionChecked = ContinuousClock.now
                // Reconnect after 2 s if the connection drops (a restart, a proxy's timeout).
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                try await withGracefulShutdownHandler {
                    var lastWrite = ContinuousClock.now
                    for await update in end.subscription.updates {
                        if ContinuousClock.now - sessionChecked >= sessionCheckInterval {
                            sessionChecked = .now
                            guard try await sessionHolds(sessionHash) else { break }
                        }
                        var changed: [JobID] = []
                        for (id, seen) in watched {
                            guard let job = update.jobs[id]?.job else {
                                watched[id] = nil
                                changed.append(id)
                                continue
                            }
                            let now = LiveVersion.of(job)
                            if now != seen {
                                watched[id] = now
                                changed.append(id)
                            }
                        }
                        // After a notification, and now and then without one (a NOTIFY lost with a
                        // connection, an update dropped for a slow reader).
                        if listing && (update.notified || ContinuousClock.now - lastCheck >= Self.newestRecheck) {
                            checkNewest = true
                        }
                        if checkNewest, ContinuousClock.now - lastCheck >= Self.newestCheckInterval {
                            lastCheck = .now
                            do {
                                let top = try await newestReads.newest(owner: owner, since: update.wokeAt) {
                                    try await newestJob(owner: owner)
                                }
                                checkNewest = false
                                if let top, top != newest {
                                    newest = top
                                    changed.append(top)
                                }
                            } catch {
                                // The check is left for a later update.
                            }
                        }
                        if !changed.isEmpty {
                            let events = changed.map { "event: change\ndata: \($0.rawValue)\n\n" }.joined()
                            try await writer.write(ByteBuffer(string: events))
                            lastWrite = .now
                        } else if ContinuousClock.now - lastWrite >= JobRoutes.keepAlive {
                            try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                            lastWrite = .now
                        }
                    }
                } onGracefulShutdown: {
                    end.subscription.finish()
                }
                try await writer.finish(nil)
            }
        )
    }

    /// The least time between two reads of a stream's newest job.
    static let newestCheckInterval: Duration = .milliseconds(500)
    /// The most time between two reads of it, notified or not.
    static let newestRecheck: Duration = .seconds(5)

    /// Whether the session (by its id's hash) is still open with a key that is not revoked.
    func sessionHolds(_ idHash: String) async throws -> Bool {
        guard let row = try await store.session(idHash: idHash, at: now()),
            let key = try await store.apiKey(id: row.keyID)?.key
        else { return false }
        return key.revokedAt == nil
    }

    /// The key's newest top-level job (everybody's for an admin): what a new submission changes.
    func newestJob(owner: String?) async throws -> JobID? {
        var query = JobQuery(owner: owner, limit: 1)
        query.topLevelOnly = true
        return try await store.jobs(query).first?.id
    }
}

/// The key's newest job as read after a wake-up, shared by every page stream of the key that
/// looks after the same wake-up: one read per key per wake-up however many pages it has open
/// (issue 42: a thousand streams of one session each read it, and another tenant's requests
/// waited behind them).
final class NewestJobReads: Sendable {
    private struct Entry {
        let since: ContinuousClock.Instant
        let read: Task<JobID?, any Error>
    }

    /// Keys remembered before the ones read longest ago are dropped.
    static let capacity = 1000
    private let entries = Mutex<[String: Entry]>([:])

    /// The newest job of `owner` (everybody's for `nil`), read at or after `since`: the read
    /// another stream started for the same wake-up, or a new one.
    func newest(
        owner: String?,
        since: ContinuousClock.Instant,
        read: @escaping @Sendable () async throws -> JobID?
    ) async throws -> JobID? {
        let name = owner ?? ""
        let task = entries.withLock { entries -> Task<JobID?, any Error> in
            if let entry = entries[name], entry.since >= since { return entry.read }
            if entries.count >= Self.capacity {
                let oldest = entries.sorted { $0.value.since < $1.value.since }.prefix(Self.capacity / 2)
                for (key, _) in oldest { entries[key] = nil }
            }
            let task = Task { try await read() }
            entries[name] = Entry(since: since, read: task)
            return task
        }
        return try await task.value
    }
}

/// A page stream's subscription, held by the stream's body and only weakly by the
/// connection's close callback (as `StreamEnd` is for the API's streams).
final class PageStreamEnd: Sendable {
    let subscription: JobWatch.PageSubscription
    init(_ subscription: JobWatch.PageSubscription) { self.subscription = subscription }
}
