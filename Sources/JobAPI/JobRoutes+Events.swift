import Foundation
import Hummingbird
import Queue
import ServiceLifecycle

/// `GET /v1/jobs/{id}/events`: the job as Server-Sent Events, what `jobctl watch` shows.
///
/// - `event: status` when the status, attempt, worker or cancel request changes (the first event
///   is always one), `event: progress` when only the progress moves by a whole percent. Each
///   carries the job JSON of `GET /v1/jobs/{id}`.
/// - A comment (`: keep-alive`) after 15 s without an event, so proxies keep the connection.
/// - The stream ends after the event that shows the job ended. A client that reconnects to an
///   ended job with `Last-Event-ID` gets `204 No Content`, which tells `EventSource` to stop.
/// - On SIGTERM, and after the server's `maximumStream`, the stream ends; the client reconnects
///   (to another server) and gets the job's current state first.
extension JobRoutes {
    package static let keepAlive: Duration = .seconds(15)

    func events(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.read, context)
        let id = try Self.jobID(context)
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        if job.status.isTerminal, request.headers.first(where: { $0.name.canonicalName == "last-event-id" }) != nil {
            return Response(status: .noContent)
        }
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no",
        ]
        if context.isHead { return Response(status: .ok, headers: headers) }
        // The first event now, so that the stream holds it as bytes rather than the whole job.
        var stream = EventStream()
        let first = try stream.event(for: job)
        // An ended job: its one event, and no watch (nothing left to wait for).
        if job.status.isTerminal {
            return Response(
                status: .ok,
                headers: headers,
                body: ResponseBody { writer in
                    try await writer.write(first)
                    try await writer.finish(nil)
                }
            )
        }
        // Admitted before the answer starts: past the key's limit it is a 429, not a stream.
        guard let subscription = watch.watch(id, owner: key.id, until: .now + configuration.maximumStream) else {
            throw APIError.tooManyWatches(watch.maximumPerKey)
        }
        // A client that leaves gives up its watch at once, not at the next keep-alive's failed
        // write (up to 15 s): the connection's close ends the subscription. The callback holds
        // it weakly, so that streams that ended on a connection that stays open are not kept.
        let end = StreamEnd(subscription)
        context.connectionClosed?.whenComplete { [weak end] _ in end?.subscription.finish() }
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { [first, stream, end] writer in
                defer { end.subscription.finish() }
                var stream = stream
                try await writer.write(first)
                try await withGracefulShutdownHandler {
                    var lastWrite = ContinuousClock.now
                    for await snapshot in end.subscription.updates {
                        guard let update = snapshot?.job else { break }
                        if let event = try stream.eventIfChanged(update) {
                            try await writer.write(event)
                            lastWrite = .now
                            if update.status.isTerminal { break }
                        } else if ContinuousClock.now - lastWrite >= Self.keepAlive {
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
}

/// An event stream's subscription, held by the stream's body and only weakly by the
/// connection's close callback.
final class StreamEnd: Sendable {
    let subscription: JobWatch.Subscription
    init(_ subscription: JobWatch.Subscription) { self.subscription = subscription }
}

/// What a stream has sent, to send only changes.
struct EventStream {
    /// The same fields make a dashboard page's token (`Dashboard.LiveVersion`): change both.
    private struct Seen: Equatable {
        var status: JobStatus
        var attempt: Int
        var worker: String?
        var cancelRequested: Bool
        var percent: Int

        init(_ job: Job) {
            status = job.status
            attempt = job.attempt
            worker = job.worker
            cancelRequested = job.cancelRequested
            percent = JobProgress.wholePercent(job.progress)
        }
    }

    private var seen: Seen?
    private var sequence = 0

    /// The event for `job` whatever was sent before (the first of a stream).
    mutating func event(for job: Job) throws -> ByteBuffer {
        let now = Seen(job)
        var kind = "status"
        if let seen, seen.status == now.status, seen.attempt == now.attempt, seen.worker == now.worker,
            seen.cancelRequested == now.cancelRequested
        {
            kind = "progress"
        }
        seen = now
        sequence += 1
        let data = try Job.makeJSONEncoder(pretty: false).encode(JobRoutes.presented(job))
        return ByteBuffer(string: "id: \(sequence)\nevent: \(kind)\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
    }

    /// The event for `job` if anything a client sees has changed since the last one.
    mutating func eventIfChanged(_ job: Job) throws -> ByteBuffer? {
        guard Seen(job) != seen else { return nil }
        return try event(for: job)
    }
}
