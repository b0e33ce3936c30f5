import Foundation
import Hummingbird
import JobctlCore
import Prometheus
import Synchronization

/// A rate: so many requests per second on average, up to `burst` at once.
public struct RateLimit: Sendable, Hashable {
    public var perSecond: Double
    public var burst: Double

    public init(perSecond: Double, burst: Double? = nil) {
        self.perSecond = perSecond
        self.burst = max(1, burst ?? perSecond * 2)
    }
}

/// Token buckets by name (an API key's id, a peer address), in this process: with N `jobctl
/// serve` processes behind a balancer a key gets up to N times the rate.
package final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: ContinuousClock.Instant
    }

    /// Buckets kept before the full ones are dropped (a full bucket is the same as none).
    private static let capacity = 10_000

    let limit: RateLimit
    private let buckets = Mutex<[String: Bucket]>([:])

    package init(_ limit: RateLimit) { self.limit = limit }

    /// Takes a token from `name`'s bucket: `nil` when there was one, or the whole seconds to
    /// wait for the next (`Retry-After`).
    package func take(_ name: String, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            var bucket = refilled(buckets[name], now: now)
            defer {
                buckets[name] = bucket
                if buckets.count > Self.capacity { prune(&buckets, now: now) }
            }
            guard bucket.tokens < 1 else {
                bucket.tokens -= 1
                return nil
            }
            return secondsUntilOne(bucket)
        }
    }

    /// Takes `tokens` more from `name`'s bucket for a request that cost that much (a large
    /// response); the bucket may go below zero, and the key then waits for it to refill.
    package func charge(_ name: String, tokens: Double, now: ContinuousClock.Instant = .now) {
        guard tokens > 0 else { return }
        buckets.withLock { buckets in
            var bucket = refilled(buckets[name], now: now)
            bucket.tokens -= min(tokens, limit.burst * 4)
            buckets[name] = bucket
        }
    }

    /// What a response costs is its size too: past `bytesPerToken` each `bytesPerToken` more is
    /// another token of `name`'s, so a key that pulls big pages slows itself down, not the
    /// server's other tenants.
    package func charge(_ name: String, responseBytes bytes: Int) {
        guard bytes > Self.bytesPerToken else { return }
        charge(name, tokens: Double(bytes - Self.bytesPerToken) / Double(Self.bytesPerToken))
    }

    /// A response's bytes that one token pays for (`charge(_:responseBytes:)`).
    package static let bytesPerToken = 16 * 1024

    /// Whether `name` would be refused now, without taking a token: the seconds to wait, or `nil`.
    func wait(_ name: String, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            guard let bucket = buckets[name] else { return nil }
            let current = refilled(bucket, now: now)
            return current.tokens < 1 ? secondsUntilOne(current) : nil
        }
    }

    private func refilled(_ bucket: Bucket?, now: ContinuousClock.Instant) -> Bucket {
        guard var bucket else { return Bucket(tokens: limit.burst, at: now) }
        let elapsed = now - bucket.at
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        bucket.tokens = min(limit.burst, bucket.tokens + seconds * limit.perSecond)
        bucket.at = now
        return bucket
    }

    /// Whole seconds (`Retry-After`), at most a day: a rate too small to refill in that time
    /// (the server refuses such rates; a bucket charged deep) never traps the conversion.
    private func secondsUntilOne(_ bucket: Bucket) -> Int {
        let seconds = ((1 - bucket.tokens) / limit.perSecond).rounded(.up)
        return seconds.isFinite ? max(1, Int(min(seconds, 86_400))) : 86_400
    }

    private func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant) {
        buckets = buckets.filter { refilled($0.value, now: now).tokens < limit.burst }
    }
}

/// Bounds every request but the ones that wait on purpose: a long poll is bounded by its
/// `?wait=` (at most the server's maximum), an event stream answers at once and then streams. A request
/// past its time is cancelled and answered 408 `request_timeout` (a body sent too slowly, a
/// database that does not answer). A submit that timed out may still have been stored: retry it
/// with the same `Idempotency-Key`.
struct RequestTimeout: RouterMiddleware {
    let configuration: APIConfiguration

    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        // A long poll is bounded by its own wait (at most --max-wait), and holds no body to read:
        // no timer and no task group for it, which would cost more than the poll itself.
        if request.method == .get, request.uri.queryParameters.get("wait") != nil {
            return try await next(request, context)
        }
        let limit = configuration.requestTimeout
        let timedOut = AtomicFlag()
        return try await withoutActuallyEscaping(next) { next in
            let handler = UncheckedSendable(next)
            return try await withThrowingTaskGroup(of: Response?.self) { group in
                group.addTask { try await handler.value(request, context) }
                group.addTask {
                    try await Task.sleep(for: limit)
                    timedOut.set()
                    return nil
                }
                defer { group.cancelAll() }
                do {
                    if let response = try await group.next() ?? nil { return response }
                } catch  where !timedOut.isSet {
                    throw error
                } catch {}
                throw APIError(
                    .requestTimeout,
                    "the request took longer than \(limit); a submit may have been stored: retry it with the same Idempotency-Key"
                )
            }
        }
    }
}

/// A value that crosses into a child task of a group its creator awaits (a middleware's `next`).
private struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Requests by route, method and status (`jobctl_http_requests_total`) and their durations
/// (`jobctl_http_request_duration_seconds`, to the response's head: an event stream counts
/// until it starts), in the registry `/metrics` serves.
struct HTTPMetrics: RouterMiddleware {
    static let buckets: [Duration] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10_000, 60_000].map {
        .milliseconds($0)
    }

    static var requests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "jobctl",
            subsystem: "http",
            metricName: "requests",
            unitName: "total",
            helpText: "HTTP API requests by route pattern, method and status."
        )
    }
    static var duration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "jobctl",
            subsystem: "http",
            metricName: "request_duration",
            unitName: "seconds",
            helpText: "From a request's arrival to its answer's head (an event stream or long poll: until it starts)."
        )
    }

    let registry: PrometheusCollectorRegistry

    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            record(context.endpointPath, request.method, response.status.code, since: start)
            return response
        } catch {
            record(
                context.endpointPath,
                request.method,
                (error as? any HTTPResponseError)?.status.code ?? 500,
                since: start
            )
            throw error
        }
    }

    private func record(
        _ route: String?,
        _ method: HTTPRequest.Method,
        _ status: Int,
        since start: ContinuousClock.Instant
    ) {
        // Unrouted paths share one label: a scanner must not grow the registry.
        let route = route ?? "unmatched"
        registry.makeCounter(
            descriptor: Self.requests,
            labels: [("route", route), ("method", method.rawValue), ("status", "\(status)")]
        )
        .increment()
        registry.makeDurationHistogram(
            descriptor: Self.duration,
            labels: [("route", route), ("method", method.rawValue)],
            buckets: Self.buckets
        )
        .record(ContinuousClock.now - start)
    }
}

/// A body whose `Content-Length` is over the limit is refused (413) before a byte of it is
/// read, and the connection closed (it would be read through otherwise).
struct DeclaredBodyLimit: RouterMiddleware {
    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > context.maxUploadSize {
            var response = try APIError(
                .contentTooLarge,
                .invalidRequest,
                "the body is larger than \(context.maxUploadSize / 1024) KiB"
            ).response(from: request, context: context)
            response.headers[.connection] = "close"
            // Stop reading: the body is never read (Hummingbird would otherwise read it through
            // to reach a next request), and the connection ends once the answer is out.
            context.channel?.close(mode: .input, promise: nil)
            return response
        }
        return try await next(request, context)
    }
}

/// A request context that knows when it answers a `HEAD` (`HeadRequests`).
package protocol HeadRequestContext: RequestContext {
    /// A `HEAD` request, routed as its `GET`: the route answers without a body.
    var isHead: Bool { get set }
}

/// `HEAD` on every `GET` route: the `GET`'s handler, answered with its status and headers
/// (`Content-Length` included) and no body. The context says so, so that a route that would
/// stream (an event stream) answers without starting one.
enum HeadRequests {
    static func handler<Context: HeadRequestContext>(
        _ get: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> @Sendable (Request, Context) async throws -> Response {
        { request, context in
            var context = context
            context.isHead = true
            var response = try await get(request, context)
            let length = response.body.contentLength
            response.body = ResponseBody()
            if let length { response.headers[.contentLength] = "\(length)" }
            return response
        }
    }
}

extension RouterMethods where Context: HeadRequestContext {
    /// `GET path`, and `HEAD path` answered as it with no body (`HeadRequests`).
    @discardableResult
    package func getAndHead(
        _ path: RouterPath,
        use handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> Self {
        get(path, use: handler)
        return on(path, method: .head, use: HeadRequests.handler(handler))
    }
}
