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

/// A long poll taken below Hummingbird (JobAPIServer's `LongPollInterceptor`): the route parks
/// its wait here, and the watch answers through it when the job ends or the wait is over.
package protocol ParkedPoll: Sendable {
    /// The watch holds the poll now; `cancel` makes it forget the poll.
    func parked(cancel: @escaping @Sendable () -> Void)
    /// Sends the answer on the connection (from any thread).
    func answer(_ answer: PollAnswer)
}

/// What a long poll answers: the job (200), 404 when it is gone, 503 when the wait is over and
/// the database cannot be read.
package struct PollAnswer: Sendable {
    package var status: HTTPResponse.Status
    package var body: ByteBuffer

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

    package var headers: HTTPFields { [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"] }

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
