import Foundation
import Hummingbird
import HummingbirdCore
import JobAPI
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Queue
import ServiceLifecycle
import Synchronization

// The channel handler that parks long polls below Hummingbird: see LongPolls.swift.

/// Hummingbird's HTTP/1.1 channel with `LongPollInterceptor` between its connection-state
/// handler (idle timeout, graceful close) and its connection loop. There, the state handler
/// sees a parked poll as a request in progress: the idle timer leaves the connection alone
/// while it waits, and a server that is stopping closes it once the answer has gone out.
struct LongPollingHTTP1Channel: ServerChildChannel {
    let base: HTTP1Channel
    let desk: PollDesk
    /// How long a response may wait for a client that does not read it (`StalledReaderTimeout`).
    let stalledReaderTimeout: TimeAmount

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { [desk, stalledReaderTimeout] value in
            let pipeline = channel.pipeline.syncOperations
            let state = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(LongPollInterceptor(desk: desk), position: .after(state))
            try pipeline.addHandler(StalledReaderTimeout(timeout: stalledReaderTimeout), position: .first)
            return value
        }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// In front of Hummingbird's connection loop: takes `GET /v1/jobs/{id}?wait=` when the
/// connection has nothing else in flight, and answers it when the watch does. Everything else
/// passes through untouched.
///
/// While a poll is held, nothing more is read from the socket (what one read brought along is
/// kept and replayed after the answer, in order). When the client leaves, the watch forgets
/// the poll; when the server stops, `JobWatch.stopWaiting` has it answered at once.
final class LongPollInterceptor: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private struct Poll {
        let slot: PollSlot
        /// Its `end` has been read.
        var read = false
        var closeAfter: Bool
    }

    private let desk: PollDesk
    private var context: ChannelHandlerContext?
    private var poll: Poll?
    /// Requests handed to Hummingbird and not answered yet.
    private var routed = 0
    private var held: [HTTPRequestPart] = []
    private var readHeld = false
    /// An event stream is being written.
    private var streaming = false

    init(desk: PollDesk) { self.desk = desk }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // Each connection keeps its last read buffer for the next read. NIO starts it at 2 KB;
        // a request head is a few hundred bytes, and the buffer grows when reads fill it.
        try? context.channel.syncOptions?.setOption(
            .recvAllocator,
            value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)
        )
    }

    /// The connection is gone (Hummingbird's state handler before this one does not pass
    /// `channelInactive` on; every handler is removed when the channel closes): the watch
    /// forgets the poll.
    func handlerRemoved(context: ChannelHandlerContext) {
        poll?.slot.cancel()
        poll = nil
        held = []
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(unwrapInboundIn(data), context)
    }

    private func receive(_ part: HTTPRequestPart, _ context: ChannelHandlerContext) {
        if var current = poll {
            if current.read {
                held.append(part)
            } else if case .end = part {
                current.read = true
                poll = current
            }
            return
        }
        if case .head(let head) = part {
            if routed == 0, PollDesk.isLongPoll(head) {
                let slot = PollSlot(NIOLoopBound(self, eventLoop: context.eventLoop))
                let connection = head.headerFields[.connection]?.lowercased() ?? ""
                poll = Poll(slot: slot, closeAfter: connection.contains("close"))
                desk.begin(head, slot: slot, channel: context.channel)
                return
            }
            routed += 1
        }
        context.fireChannelRead(wrapInboundOut(part))
    }

    /// Bytes the decoder cannot take while a poll waits (a request pipelined after a
    /// `Connection: close` one, which HTTP forbids, or garbage): they are dropped, the poll is
    /// still answered, then the connection closes. (Passed on, the error had Hummingbird answer
    /// 400 and close at once: the poll's answer was lost.)
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if var current = poll, error is HTTPParserError {
            current.closeAfter = true
            poll = current
            held = []
            return
        }
        context.fireErrorCaught(error)
    }

    func read(context: ChannelHandlerContext) {
        if let poll, poll.read {
            readHeld = true
        } else {
            context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            streaming = head.headerFields[.contentType] == "text/event-stream"
        case .end:
            routed = max(0, routed - 1)
            streaming = false
        case .body:
            break
        }
        context.write(data, promise: promise)
    }

    /// A client that closed its side during an event stream has left (`EventSource` never
    /// half-closes): the connection is closed now, and with it the stream's watch, rather than
    /// at the next keep-alive that fails (up to 15 s later).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, streaming {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The answer of the poll in `slot` (on the event loop).
    func finish(_ slot: PollSlot, _ head: HTTPResponse, _ body: ByteBuffer) {
        guard let context, let current = poll, current.slot === slot else { return }
        poll = nil
        // A request not read to its end (it cannot be: it has no body), or a client that asked
        // for it: the connection ends.
        let closing = !current.read || current.closeAfter
        var head = head
        head.headerFields[.contentLength] = "\(body.readableBytes)"
        head.headerFields[.date] = HTTPDate.now()
        head.headerFields[.server] = "jobctl"
        if closing { head.headerFields[.connection] = "close" }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if body.readableBytes > 0 { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if closing {
            context.close(promise: nil)
            return
        }
        let parts = held
        held = []
        for part in parts { receive(part, context) }
        // Hummingbird's loop takes what was read at the end of a read.
        if !parts.isEmpty { context.fireChannelReadComplete() }
        if readHeld, poll == nil {
            readHeld = false
            context.read()
        }
    }
}

/// The `Date` header's form (RFC 9110 IMF-fixdate), for answers written below Hummingbird.
enum HTTPDate {
    static func now() -> String {
        var seconds = time(nil)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
