import Foundation
import Hummingbird
import JobctlCore
import Logging
import Media
import NIOCore
import Prometheus
import Queue
import SafeHTTP
import ServiceLifecycle
import Synchronization

/// The request context: the API key the request was authenticated with (every route but
/// `/healthz`), and a small body limit.
public struct APIRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var key: APIKey?
    /// The peer of the connection (a proxy's address behind a reverse proxy: `X-Forwarded-For`
    /// is not read).
    public let remoteAddress: SocketAddress?
    /// Set when the request is a long poll taken below Hummingbird: its wait is parked there.
    var parkedPoll: PollSlot?
    /// Completes when the connection closes (an event stream then gives up its watch at once).
    let connectionClosed: EventLoopFuture<Void>?
    /// The connection, to stop reading a body that is refused unread (`DeclaredBodyLimit`).
    let channel: (any Channel)?
    /// A `HEAD` request, routed as its `GET` (`HeadRequests`): the route answers without a body.
    var isHead = false

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        connectionClosed = source.channel.closeFuture
        channel = source.channel
    }

    /// Job requests are small; anything bigger is refused with 413 before it is read.
    public var maxUploadSize: Int { 64 * 1024 }
}

/// What the routes work with: the store (jobs and keys), the presets, where local paths may
/// point, the outbound address guard.
public struct APIConfiguration: Sendable {
    public var store: any JobDatabase
    public var catalog: PresetCatalog
    public var paths: PathScope
    public var policy: AddressPolicy
    /// The longest `?wait=` a client may ask for.
    public var maximumWait: Duration
    /// How long an event stream runs before the server ends it (its client reconnects), so
    /// that connections move to new servers after a deploy and none lives for ever.
    public var maximumStream: Duration
    /// How long any other request may take, reading its body included (408 after).
    public var requestTimeout: Duration
    /// Requests per second per API key in this process, and the burst above it; `nil`: no limit.
    public var rateLimit: RateLimit?
    /// What `GET /metrics` serves; `nil`: no such route.
    public var metrics: PrometheusCollectorRegistry?
    /// Whether `/metrics` is served without a key (a scraper on a private network).
    public var publicMetrics: Bool
    /// How often watched jobs are read when no notification comes (long polls, event streams).
    public var watchInterval: Duration
    /// Long polls and event streams one key may hold open on one server (429 past it).
    public var maximumWatchesPerKey: Int
    /// How long a key row read from the database is used again: a revoked key is refused
    /// within this long (`.zero`: read on every request).
    public var keyCacheLifetime: Duration

    public init(
        store: any JobDatabase,
        catalog: PresetCatalog,
        paths: PathScope = PathScope(),
        policy: AddressPolicy = AddressPolicy(),
        maximumWait: Duration = .seconds(60),
        maximumStream: Duration = .seconds(30 * 60),
        requestTimeout: Duration = .seconds(30),
        rateLimit: RateLimit? = RateLimit(perSecond: 100),
        metrics: PrometheusCollectorRegistry? = nil,
        publicMetrics: Bool = false,
        watchInterval: Duration = .seconds(1),
        keyCacheLifetime: Duration = .seconds(2),
        maximumWatchesPerKey: Int = 1000
    ) {
        self.store = store
        self.catalog = catalog
        self.paths = paths
        self.policy = policy
        self.maximumWait = maximumWait
        self.maximumStream = maximumStream
        self.requestTimeout = requestTimeout
        self.rateLimit = rateLimit
        self.metrics = metrics
        self.publicMetrics = publicMetrics
        self.watchInterval = watchInterval
        self.keyCacheLifetime = keyCacheLifetime
        self.maximumWatchesPerKey = maximumWatchesPerKey
    }

    /// The routes that need no key.
    var openPaths: Set<String> {
        publicMetrics ? ["/healthz", "/openapi.json", "/metrics"] : ["/healthz", "/openapi.json"]
    }
}

/// The routes of `jobctl serve` (docs/api.md).
public enum APIRoutes {
    public static func router(_ configuration: APIConfiguration, logger: Logger) -> Router<APIRequestContext> {
        router(configuration, watch: watch(configuration, logger: logger), logger: logger)
    }

    /// The one watch of a server's long polls and event streams.
    static func watch(_ configuration: APIConfiguration, logger: Logger) -> JobWatch {
        JobWatch(
            store: configuration.store,
            interval: configuration.watchInterval,
            maximumPerKey: configuration.maximumWatchesPerKey,
            logger: logger
        )
    }

    /// `GET path`, and `HEAD path` answered as it with no body (`HeadRequests`).
    private static func get(
        _ router: Router<APIRequestContext>,
        _ path: RouterPath,
        _ handler: @escaping @Sendable (Request, APIRequestContext) async throws -> Response
    ) {
        router.get(path, use: handler)
        router.on(path, method: .head, use: HeadRequests.handler(handler))
    }

    static func router(_ configuration: APIConfiguration, watch: JobWatch, logger: Logger) -> Router<APIRequestContext>
    {
        let router = Router(context: APIRequestContext.self)
        let table = RouteTable()
        if let registry = configuration.metrics { router.add(middleware: HTTPMetrics(registry: registry)) }
        router.add(middleware: ErrorShape(routes: table, logger: logger))
        router.add(middleware: DeclaredBodyLimit())
        router.add(middleware: RequestTimeout(configuration: configuration))
        router.add(
            middleware: KeyAuthentication(
                store: configuration.store,
                openPaths: configuration.openPaths,
                cache: configuration.keyCacheLifetime > .zero
                    ? APIKeyCache(lifetime: configuration.keyCacheLifetime) : nil,
                keyLimiter: configuration.rateLimit.map(RateLimiter.init),
                failureLimiter: RateLimiter(RateLimit(perSecond: 10)),
                logger: logger
            )
        )
        let health = HealthProbe { [store = configuration.store] in try await store.ping() }
        get(router, "/healthz") { _, _ -> Response in
            await health.healthy()
                ? try APIResponses.json(["status": "ok"])
                : try APIResponses.json(["status": "database unavailable"], status: .serviceUnavailable)
        }
        get(router, "/openapi.json") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json))
            )
        }
        if let registry = configuration.metrics {
            let watchers = registry.makeGauge(
                descriptor: MetricNameDescriptor(
                    namespace: "jobctl",
                    subsystem: "api",
                    metricName: "watchers",
                    unitName: "",
                    helpText: "Long polls and event streams open on this server."
                )
            )
            get(router, "/metrics") { _, context -> Response in
                if !configuration.publicMetrics { _ = try JobRoutes.require(.admin, context) }
                watchers.set(Int64(watch.count))
                return Response(
                    status: .ok,
                    headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: registry.emitToString()))
                )
            }
        }
        let jobs = JobRoutes(configuration: configuration, watch: watch)
        router.post("/v1/jobs", use: jobs.submit)
        get(router, "/v1/jobs", jobs.list)
        get(router, "/v1/jobs/{id}", jobs.show)
        get(router, "/v1/jobs/{id}/events", jobs.events)
        router.post("/v1/jobs/{id}/cancel", use: jobs.cancel)
        router.post("/v1/jobs/{id}/retry", use: jobs.retry)
        get(router, "/v1/jobs/{id}/deliveries", jobs.deliveries)
        router.post("/v1/jobs/{id}/deliveries/{delivery}/redeliver", use: jobs.redeliver)
        table.set(router.routes.map { ($0.method, $0.path.description) })
        return router
    }
}

/// Every error leaves in the API's one shape: Hummingbird's own (413, 404) keep their status,
/// a method a path does not have is 405 with `Allow`, a database error is 503
/// `database_unavailable`, anything else 500 `internal`, with the details in the log only.
struct ErrorShape: RouterMiddleware {
    let routes: RouteTable
    let logger: Logger

    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as Hummingbird.HTTPError {
            if error.status == .notFound {
                let allowed = routes.methods(for: request.uri.path)
                if !allowed.isEmpty {
                    var refusal = APIError(
                        .methodNotAllowed,
                        "\(request.uri.path) answers \(allowed.joined(separator: ", "))"
                    )
                    refusal.allow = allowed
                    throw refusal
                }
            }
            let code: ErrorCode = error.status == .notFound ? .notFound : .invalidRequest
            throw APIError(error.status, code, error.body ?? error.status.reasonPhrase)
        } catch let error as JobStoreError where error.code != .conflict && error.code != .notFound {
            logger.error("The job database failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw APIError.databaseUnavailable
        } catch {
            logger.error("A request failed", metadata: ["error": "\(error)", "path": "\(request.uri.path)"])
            throw APIError(.internalError, "the request failed; the server's log has the details")
        }
    }
}

/// The router's routes, to tell a path that does not exist (404) from a method a path does not
/// have (405). Filled once, when the router is built.
final class RouteTable: Sendable {
    private let routes = Mutex<[(method: HTTPRequest.Method, segments: [Substring])]>([])

    func set(_ routes: [(HTTPRequest.Method, String)]) {
        self.routes.withLock { $0 = routes.map { ($0.0, $0.1.split(separator: "/")) } }
    }

    /// The methods routed for `path` (`{name}` segments match any segment), sorted.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/")
        let methods = routes.withLock { routes in
            routes.filter { route in
                route.segments.count == segments.count
                    && zip(route.segments, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
            }
            .map(\.method.rawValue)
        }
        return Set(methods).sorted()
    }
}

/// `Authorization: Bearer jck_…` on every route but the open ones (`/healthz`, `/openapi.json`,
/// `/metrics` when public), then the key's rate limit. A failure is logged with the key's id
/// when it has one, never with the key; an address that keeps failing is slowed down (429)
/// before its attempts reach the database.
struct KeyAuthentication: RouterMiddleware {
    let store: any APIKeyStore
    let openPaths: Set<String>
    let cache: APIKeyCache?
    let keyLimiter: RateLimiter?
    /// A response's bytes that one token pays for (`RateLimiter.charge`).
    static let bytesPerToken = 16 * 1024
    let failureLimiter: RateLimiter
    let logger: Logger

    func handle(
        _ request: Request,
        context: APIRequestContext,
        next: (Request, APIRequestContext) async throws -> Response
    ) async throws -> Response {
        if openPaths.contains(request.uri.path) { return try await next(request, context) }
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        if let wait = failureLimiter.wait(address) { throw APIError.rateLimited(wait) }
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            _ = failureLimiter.take(address)
            throw APIError.unauthorized
        }
        let text = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        let key: APIKey?
        do {
            key = try await APIKeys.verify(Substring(text), in: store, cache: cache)
        } catch {
            logger.error("Checking an API key failed", metadata: ["error": "\(error)"])
            throw APIError.databaseUnavailable
        }
        guard let key else {
            _ = failureLimiter.take(address)
            logger.warning(
                "Refused an API key",
                metadata: [
                    "key.id": "\(APIKeys.parse(Substring(text))?.id ?? "malformed")", "path": "\(request.uri.path)",
                    "address": "\(address)",
                ]
            )
            throw APIError.unauthorized
        }
        if let wait = keyLimiter?.take(key.id) { throw APIError.rateLimited(wait) }
        var context = context
        context.key = key
        let response = try await next(request, context)
        // What a response costs is its size too: past 16 KB each 16 KB more is another token,
        // so a key that pulls big pages slows itself down, not the server's other tenants.
        // (`HEAD` has produced the whole body and sends its length only: it pays for it too.)
        let bytes = max(response.body.contentLength ?? 0, response.headers[.contentLength].flatMap { Int($0) } ?? 0)
        if let keyLimiter, bytes > Self.bytesPerToken {
            keyLimiter.charge(key.id, tokens: Double(bytes - Self.bytesPerToken) / Double(Self.bytesPerToken))
        }
        return response
    }
}

/// The `/v1/jobs` routes. A key sees and acts on the jobs it submitted; an `admin` key on all.
struct JobRoutes: Sendable {
    let configuration: APIConfiguration
    let watch: JobWatch
    var store: any JobDatabase { configuration.store }

    func submit(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let idempotencyKey = request.headers.first { $0.name.canonicalName == "idempotency-key" }?.value
        if let idempotencyKey, idempotencyKey.isEmpty || idempotencyKey.utf8.count > 255 {
            throw APIError(
                .badRequest,
                .invalidRequest,
                "Idempotency-Key is 1 to 255 bytes",
                field: "Idempotency-Key"
            )
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: context.maxUploadSize)
        } catch {
            throw APIError(
                .contentTooLarge,
                .invalidRequest,
                "the body is larger than \(context.maxUploadSize / 1024) KiB"
            )
        }
        let submitted: SubmitRequest
        do {
            submitted = try JSONDecoder().decode(SubmitRequest.self, from: Data(buffer: body))
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw APIError(.badRequest, .invalidRequest, "the body is not JSON")
        }
        let jobRequest = try submitted.jobRequest(
            owner: key,
            idempotencyKey: idempotencyKey,
            catalog: configuration.catalog,
            scope: configuration.paths,
            policy: configuration.policy
        )
        let (job, created) = try await store.submit(jobRequest)
        if !created {
            // Stripe's rule: the same key with another request is a client bug, not a replay.
            guard Self.sameRequest(job, jobRequest) else {
                throw APIError(
                    .idempotencyKeyReused,
                    "Idempotency-Key was used for a different request (job \(job.id))",
                    field: "Idempotency-Key"
                )
            }
            return try APIResponses.json(Self.presented(job))
        }
        return try APIResponses.json(Self.presented(job), status: .created)
    }

    func show(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.read, context)
        let id = try Self.jobID(context)
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        if let wait = try Self.waitParameter(request, maximum: configuration.maximumWait), !job.status.isTerminal {
            return try await JobWaiter(watch: watch).response(waitingFor: job, by: key, upTo: wait, context: context)
        }
        return try APIResponses.json(Self.presented(job))
    }

    func list(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.read, context)
        let parameters = request.uri.queryParameters
        var query = JobQuery(owner: key.scope == .admin ? nil : key.id, limit: 25)
        if let status = parameters.get("status") {
            guard let value = JobStatus(rawValue: status) else {
                throw APIError.invalid("status", "status is one of unknown, reading, completed, failed, cancelled")
            }
            query.status = value
        }
        if let limit = parameters.get("limit") {
            guard let value = Int(limit), (1...200).contains(value) else {
                throw APIError.invalid("limit", "limit is between 1 and 200")
            }
            query.limit = value
        }
        if let cursor = parameters.get("cursor") {
            guard let value = ListCursor.decode(cursor) else {
                throw APIError.invalid("cursor", "cursor is not one this server gave")
            }
            query.after = value
        }
        // A page ends at `limit` jobs or at the first job that takes it past `pageBytes`
        // (jobs with big results could make 200 of them 10 MB); the cursor goes on from there.
        // Read in small batches, so a page of big jobs reads little more than it sends.
        let encoder = Job.makeJSONEncoder(pretty: false)
        var body = ByteBuffer(string: #"{"jobs":["#)
        var count = 0
        var last: Job?
        var full = false
        while !full {
            var batch = query
            batch.limit = min(query.limit - count, Self.listBatch)
            batch.after = last.map { JobQuery.Cursor(createdAt: $0.createdAt.milliseconds, id: $0.id) } ?? query.after
            let jobs = try await store.jobs(batch)
            for job in jobs {
                if count > 0 { body.writeString(",") }
                body.writeBytes(try encoder.encode(Self.presented(job)))
                count += 1
                last = job
                if count == query.limit || body.readableBytes >= Self.pageBytes {
                    full = true
                    break
                }
            }
            if jobs.count < batch.limit { break }
        }
        let next = full ? last.map(ListCursor.encode) : nil
        body.writeString(#"],"next_cursor":"#)
        body.writeString(next.map { #""\#($0)""# } ?? "null")
        body.writeString("}")
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: body)
        )
    }

    /// The most bytes of jobs a listing page holds (one job more than this at most).
    static let pageBytes = 1 << 20
    /// Jobs read from the store at a time while a page fills.
    static let listBatch = 25

    func cancel(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let id = try Self.jobID(context)
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        do {
            switch try await store.cancel(id) {
            case .cancelled(let job), .requested(let job):
                return try APIResponses.json(Self.presented(job), status: .accepted)
            }
        } catch let error as JobStoreError where error.code == .conflict {
            throw APIError(.jobEnded, error.message)
        }
    }

    /// `?force=true` also runs a poison job (`worker_crashed`) again: an admin's decision, since
    /// each forced run may take more workers down.
    func retry(_ request: Request, context: APIRequestContext) async throws -> Response {
        let key = try Self.require(.submit, context)
        let id = try Self.jobID(context)
        let force: Bool
        switch request.uri.queryParameters.get("force") {
        case nil, "false": force = false
        case "true": force = true
        case .some: throw APIError.invalid("force", "force is true or false")
        }
        if force && key.scope != .admin {
            throw APIError(.forbidden, "force is for admin keys: a poison job may take more workers down")
        }
        guard let job = try await store.job(id), Self.visible(job, to: key) else { throw APIError.noJob(id.rawValue) }
        do {
            return try APIResponses.json(Self.presented(try await store.retry(id, force: force)))
        } catch let error as JobStoreError where error.code == .conflict {
            throw APIError(.jobNotRetryable, error.message)
        }
    }

    // MARK: Helpers

    /// The job as its client sees it: the idempotency key it sent, without the tenant prefix
    /// the store keeps it under.
    static func presented(_ job: Job) -> Job {
        var job = job
        if let owner = job.owner, let key = job.idempotencyKey, key.hasPrefix("api:\(owner):") {
            job.idempotencyKey = String(key.dropFirst("api:\(owner):".count))
        }
        return job
    }

    static func require(_ scope: APIScope, _ context: APIRequestContext) throws -> APIKey {
        guard let key = context.key else { throw APIError.unauthorized }
        guard key.scope >= scope else {
            throw APIError(
                .forbidden,
                "this key's scope is \(key.scope.rawValue); this needs \(scope.rawValue)"
            )
        }
        return key
    }

    static func visible(_ job: Job, to key: APIKey) -> Bool { key.scope == .admin || job.owner == key.id }

    static func jobID(_ context: APIRequestContext) throws -> JobID {
        let text = try context.parameters.require("id")
        let id = JobID(text)
        guard id.isWellFormed else { throw APIError.noJob(String(text.prefix(64))) }
        return id
    }

    /// `?wait=30s` (or `1500ms`, `2m`, a number of seconds), at most `maximum`: exactly what the
    /// document's pattern allows, `^[0-9]+(\.[0-9]+)?(ms|s|m|h)?$` (no `1e3`, spaces, signs or
    /// capitals, which `parseDuration` alone would take).
    static func waitParameter(_ request: Request, maximum: Duration) throws -> Duration? {
        guard let text = request.uri.queryParameters.get("wait") else { return nil }
        guard Self.isWaitText(text), let wait = parseDuration(text) else {
            throw APIError.invalid("wait", "wait is a duration such as 30s, 1500ms or 2m")
        }
        return min(wait, maximum)
    }

    /// `DIGITS[.DIGITS][ms|s|m|h]`.
    static func isWaitText(_ text: String) -> Bool {
        var number = Substring(text)
        for unit in ["ms", "s", "m", "h"] where number.hasSuffix(unit) {
            number = number.dropLast(unit.count)
            break
        }
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }
    }

    /// Whether a stored job is what `request` would have created (an idempotent replay).
    static func sameRequest(_ job: Job, _ request: JobRequest) -> Bool {
        job.kind == request.kind && job.input == request.input && job.output == request.output
            && job.preset == request.preset && job.range == request.range && job.priority == request.priority
            && job.metadata == request.metadata && job.webhook == request.webhook && job.owner == request.owner
            && job.maxAttempts >= request.maxAttempts && job.presetSettings == request.presetSettings
            && job.format == request.format
    }

    static func describe(_ error: DecodingError) -> APIError {
        func path(_ keys: [any CodingKey]) -> String? {
            keys.isEmpty ? nil : keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let field = path(context.codingPath + [key]) ?? key.stringValue
            return .invalid(field, "\(field) is required")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            let field = path(context.codingPath) ?? "body"
            return .invalid(field, "\(field) has the wrong type")
        case .dataCorrupted(let context):
            if let field = path(context.codingPath) {
                return .invalid(field, "\(field) is not valid: \(context.debugDescription.prefix(200))")
            }
            return APIError(.badRequest, .invalidRequest, "the body is not JSON")
        @unknown default:
            return APIError(.badRequest, .invalidRequest, "the body could not be read")
        }
    }
}

/// The opaque `next_cursor`: base64url of `CREATED_MS:ID`.
enum ListCursor {
    static func encode(_ job: Job) -> String {
        APIKeys.base64URL(Data("\(job.createdAt.milliseconds):\(job.id.rawValue)".utf8))
    }

    static func decode(_ text: String) -> JobQuery.Cursor? {
        guard text.utf8.count <= 200 else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let plain = String(data: data, encoding: .utf8) else {
            return nil
        }
        let parts = plain.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let created = Int64(parts[0]) else { return nil }
        let id = JobID(String(parts[1]))
        guard id.isWellFormed else { return nil }
        return JobQuery.Cursor(createdAt: created, id: id)
    }
}
