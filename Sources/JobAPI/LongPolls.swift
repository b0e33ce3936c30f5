import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Queue
import ServiceLifecycle
import Synchronization

// Long polls (`GET /v1/jobs/{id}?wait=30s`) are parked below Hummingbird.
//
// An idle long poll must cost little: one process is to hold 10,000 of them. What a request
// costs while it waits is mostly async stack: every task keeps the slabs its allocator grew
// to for as long as it lives, and a request through the router, the middleware and
// Hummingbird's connection loop grows them by 10 to 20 KB. So a long poll that arrives on an idle connection never enters
// Hummingbird's connection loop: `LongPollInterceptor`, a channel handler in front of it, takes
// the request, a short task runs it through the same router (the same middleware, keys, rate
// limits and route), and the route hands the wait to `JobWatch`, which answers through the
// handler when the job ends or the wait is over. While the poll waits there is no task for it:
// a watcher entry, a slot, and the connection Hummingbird already keeps idle. docs/api.md,
// docs/benchmarks.md.

/// What a long poll answers: the job (200), 404 when it is gone, 503 when the wait is over and
/// the database cannot be read.
struct PollAnswer: Sendable {
    var status: HTTPResponse.Status
    var body: ByteBuffer

    init(_ outcome: JobWatch.Outcome, id: JobID) {
        do {
            switch outcome {
            case .job(let job):
                (status, body) = (.ok, try APIResponses.encode(JobRoutes.presented(job)))
            case .gone:
                (status, body) = try Self.error(APIError.noJob(id.rawValue))
            case .unavailable:
                (status, body) = try Self.error(APIError.databaseUnavailable)
            }
        } catch {
            (status, body) = (.internalServerError, ByteBuffer())
        }
    }

    private static func error(_ error: APIError) throws -> (HTTPResponse.Status, ByteBuffer) {
        (
            error.status,
            try APIResponses.encode(ErrorBody(error: .init(code: error.code, message: error.message, field: nil)))
        )
    }

    var headers: HTTPFields { [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"] }

    var response: Response { Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body)) }
}

/// The wait of `GET /v1/jobs/{id}?wait=`: parked in its slot when the request came through
/// `LongPollInterceptor`, else (a request pipelined behind another, the router tests) in the
/// route, on the same watch.
struct JobWaiter: Sendable {
    let watch: JobWatch

    /// The answer for `job` (visible to `key`, not ended) after waiting up to `limit`. 429 when
    /// the key holds its share of watches already.
    func response(
        waitingFor job: Job,
        by key: APIKey,
        upTo limit: Duration,
        context: APIRequestContext
    ) async throws -> Response {
        let (watch, id) = (watch, job.id)
        if let slot = context.parkedPoll {
            guard
                let token = watch.watchOnce(
                    id,
                    owner: key.id,
                    until: .now + limit,
                    answer: { outcome in
                        slot.answer(PollAnswer(outcome, id: id))
                    }
                )
            else { throw APIError.tooManyWatches(watch.maximumPerKey) }
            slot.parked { watch.cancel(token) }
            // Not sent: the slot answers.
            return Response(status: .ok)
        }
        let answer = Answer()
        guard let token = watch.watchOnce(id, owner: key.id, until: .now + limit, answer: answer.deliver) else {
            throw APIError.tooManyWatches(watch.maximumPerKey)
        }
        let outcome = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await answer.value()
            } onCancel: {
                watch.expire(token)
            }
        } onGracefulShutdown: {
            watch.expire(token)
        }
        return PollAnswer(outcome, id: id).response
    }

    /// One outcome, handed from the watch's loop to the waiting route.
    private final class Answer: Sendable {
        private let state = Mutex<(outcome: JobWatch.Outcome?, waiting: CheckedContinuation<JobWatch.Outcome, Never>?)>(
            (nil, nil)
        )

        @Sendable func deliver(_ outcome: JobWatch.Outcome) {
            let waiting = state.withLock { state in
                state.outcome = outcome
                defer { state.waiting = nil }
                return state.waiting
            }
            waiting?.resume(returning: outcome)
        }

        func value() async -> JobWatch.Outcome {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> JobWatch.Outcome? in
                    if state.outcome == nil { state.waiting = continuation }
                    return state.outcome
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

/// A long poll taken by `LongPollInterceptor`: the route parks it here (the watch will answer),
/// or the desk answers it at once (an error, a job that has ended).
final class PollSlot: Sendable {
    private enum State {
        /// The router is running the request (`cancelled`: the client has left meanwhile).
        case routing(cancelled: Bool)
        case parked(cancel: @Sendable () -> Void)
        case answered
    }

    private let state = Mutex(State.routing(cancelled: false))
    private let handler: NIOLoopBound<LongPollInterceptor>

    init(_ handler: NIOLoopBound<LongPollInterceptor>) { self.handler = handler }

    /// The watch holds the poll now; `cancel` makes it forget the poll.
    func parked(cancel: @escaping @Sendable () -> Void) {
        let cancelled = state.withLock { state -> Bool in
            guard case .routing(let cancelled) = state else { return false }
            state = cancelled ? .answered : .parked(cancel: cancel)
            return cancelled
        }
        if cancelled { cancel() }
    }

    /// Whether the route parked it (or it has been answered already): the desk sends nothing.
    var isParked: Bool {
        state.withLock { state in
            if case .routing = state { return false }
            return true
        }
    }

    /// The client left: the watch forgets the poll.
    func cancel() {
        let cancel = state.withLock { state -> (@Sendable () -> Void)? in
            switch state {
            case .routing:
                state = .routing(cancelled: true)
                return nil
            case .parked(let cancel):
                state = .answered
                return cancel
            case .answered:
                return nil
            }
        }
        cancel?()
    }

    /// Sends the answer on the connection (from any thread).
    func answer(_ answer: PollAnswer) {
        send(HTTPResponse(status: answer.status, headerFields: answer.headers), answer.body)
    }

    func send(_ head: HTTPResponse, _ body: ByteBuffer) {
        state.withLock { $0 = .answered }
        let handler = handler
        handler.eventLoop.execute { handler.value.finish(self, head, body) }
    }
}

/// Runs the long polls `LongPollInterceptor` takes through the API's router, a few at a time.
///
/// A burst of new polls (thousands of clients reconnecting after a deploy) queues here as
/// small entries rather than as thousands of tasks waiting for the database at once, each
/// with its stack: the memory such a peak takes is not all given back to the system after it.
final class PollDesk: Sendable {
    /// Polls routed at once.
    static let concurrency = 16

    private struct Pending: Sendable {
        let head: HTTPRequest
        let slot: PollSlot
        let channel: any Channel
    }

    private let pending: AsyncStream<Pending>.Continuation

    init(responder: RouterResponder<APIRequestContext>, logger: Logger) {
        let (stream, pending) = AsyncStream<Pending>.makeStream()
        self.pending = pending
        Task {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await poll in stream {
                    if running == Self.concurrency {
                        await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask { await Self.route(poll, responder, logger) }
                }
            }
        }
    }

    deinit { pending.finish() }

    /// `GET /v1/jobs/{id}?wait=…` without a body: the only requests taken below Hummingbird.
    static func isLongPoll(_ head: HTTPRequest) -> Bool {
        guard head.method == .get, let target = head.path else { return false }
        // A GET with a body goes the usual way: nothing is read while a poll waits.
        guard head.headerFields[.transferEncoding] == nil, (head.headerFields[.contentLength] ?? "0") == "0" else {
            return false
        }
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].hasPrefix("/v1/jobs/") else { return false }
        let id = parts[0].dropFirst("/v1/jobs/".count)
        guard !id.isEmpty, !id.contains("/") else { return false }
        return parts[1].split(separator: "&").contains { $0 == "wait" || $0.hasPrefix("wait=") }
    }

    func begin(_ head: HTTPRequest, slot: PollSlot, channel: any Channel) {
        pending.yield(Pending(head: head, slot: slot, channel: channel))
    }

    private static func route(_ poll: Pending, _ responder: RouterResponder<APIRequestContext>, _ logger: Logger) async
    {
        var context = APIRequestContext(source: ApplicationRequestContextSource(channel: poll.channel, logger: logger))
        context.parkedPoll = poll.slot
        let response: Response
        do {
            response = try await responder.respond(
                to: Request(head: poll.head, body: RequestBody(buffer: ByteBuffer())),
                context: context
            )
        } catch {
            logger.debug("Long poll failed", metadata: ["error.type": "\(type(of: error))"])
            response = Response(status: .internalServerError)
        }
        guard !poll.slot.isParked else { return }
        let body = Collected()
        do {
            try await response.body.write(Collector(into: body))
        } catch {
            logger.debug("Long poll's answer failed", metadata: ["error.type": "\(type(of: error))"])
        }
        poll.slot.send(response.head, body.buffer.withLock { $0 })
    }

    private final class Collected: Sendable {
        let buffer = Mutex(ByteBuffer())
    }

    private struct Collector: ResponseBodyWriter {
        let into: Collected

        mutating func write(_ buffer: ByteBuffer) async throws {
            _ = into.buffer.withLock { $0.writeImmutableBuffer(buffer) }
        }

        mutating func write(contentsOf buffers: some Sequence<ByteBuffer>) async throws {
            for buffer in buffers { try await write(buffer) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
