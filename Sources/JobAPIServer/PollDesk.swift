import Foundation
import Hummingbird
import HummingbirdCore
import JobAPI
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// A long poll taken by `LongPollInterceptor`: the route parks it here (the watch will answer),
/// or the desk answers it at once (an error, a job that has ended).
final class PollSlot: ParkedPoll {
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
