import Foundation
import Hummingbird
import JobKinds
import JobctlCore
import Logging
import Media
import NIOCore
import Observability
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
    /// is read only from `--trusted-proxy` peers, by `TrustedProxies`).
    public let remoteAddress: SocketAddress?
    /// Set when the request is a long poll taken below Hummingbird: its wait is parked there.
    package var parkedPoll: (any ParkedPoll)?
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
    public var paths: PathConfinement
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
    /// Marks the dashboard's cookies `Secure`: the server speaks TLS, or sits behind a proxy
    /// that does (`jobctl serve --secure-cookies`).
    public var secureCookies: Bool
    /// The reverse proxies whose `X-Forwarded-For` names the client (`serve --trusted-proxy`):
    /// failed sign-ins are counted per client address only where it is known.
    public var trustedProxies: TrustedProxies

    public init(
        store: any JobDatabase,
        catalog: PresetCatalog,
        paths: PathConfinement = PathConfinement(),
        policy: AddressPolicy = AddressPolicy(),
        maximumWait: Duration = .seconds(60),
        maximumStream: Duration = .seconds(30 * 60),
        requestTimeout: Duration = .seconds(30),
        rateLimit: RateLimit? = RateLimit(perSecond: 100),
        metrics: PrometheusCollectorRegistry? = nil,
        publicMetrics: Bool = false,
        watchInterval: Duration = .seconds(1),
        keyCacheLifetime: Duration = .seconds(2),
        maximumWatchesPerKey: Int = 1000,
        secureCookies: Bool = false,
        trustedProxies: TrustedProxies = TrustedProxies()
    ) {
        self.secureCookies = secureCookies
        self.trustedProxies = trustedProxies
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
    package static func watch(_ configuration: APIConfiguration, logger: Logger) -> JobWatch {
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

    package static func router(
        _ configuration: APIConfiguration,
        watch: JobWatch,
        logger: Logger
    ) -> Router<APIRequestContext> {
        let router = Router(context: APIRequestContext.self)
        let table = RouteTable()
        if let registry = configuration.metrics { router.add(middleware: HTTPMetrics(registry: registry)) }
        router.add(middleware: ErrorShape(routes: table, logger: logger))
        router.add(middleware: DeclaredBodyLimit())
        router.add(middleware: RequestTimeout(configuration: configuration))
        let failures = AuthFailures(proxies: configuration.trustedProxies)
        router.add(
            middleware: KeyAuthentication(
                store: configuration.store,
                openPaths: configuration.openPaths,
                cache: configuration.keyCacheLifetime > .zero
                    ? APIKeyCache(lifetime: configuration.keyCacheLifetime) : nil,
                keyLimiter: configuration.rateLimit.map(RateLimiter.init),
                failures: failures,
                logger: logger
            )
        )
        get(router, "/openapi.json") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: PackageResources.openapi_json))
            )
        }
        // /healthz and /metrics: the same type a worker's --metrics-port serves.
        let probe = HealthProbe { [store = configuration.store] in try await store.ping() }
        let watchers = configuration.metrics?.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "jobctl",
                subsystem: "api",
                metricName: "watchers",
                unitName: "",
                helpText: "Long polls and event streams open on this server."
            )
        )
        HealthAndMetrics(registry: configuration.metrics) {
            await probe.healthy() ? (true, ["status": "ok"]) : (false, ["status": "database unavailable"])
        }
        .add(
            to: router,
            authorize: { context in
                if !configuration.publicMetrics { _ = try JobRoutes.require(.admin, context) }
            },
            beforeMetrics: { watchers?.set(Int64(watch.count)) },
            register: { path, handler in get(router, path, handler) }
        )
        let jobs = JobRoutes(configuration: configuration, watch: watch)
        router.post("/v1/jobs", use: jobs.submit)
        get(router, "/v1/jobs", jobs.list)
        get(router, "/v1/jobs/{id}", jobs.show)
        get(router, "/v1/jobs/{id}/events", jobs.events)
        router.post("/v1/jobs/{id}/cancel", use: jobs.cancel)
        router.post("/v1/jobs/{id}/retry", use: jobs.retry)
        get(router, "/v1/jobs/{id}/deliveries", jobs.deliveries)
        router.post("/v1/jobs/{id}/deliveries/{delivery}/redeliver", use: jobs.redeliver)
        DashboardRoutes(
            store: configuration.store,
            confinement: configuration.paths,
            secureCookies: configuration.secureCookies,
            failures: failures,
            keyLimiter: configuration.rateLimit.map(RateLimiter.init),
            watch: watch,
            maximumStream: configuration.maximumStream,
            sessionCheckInterval: configuration.watchInterval * 15,
            logger: logger,
            now: { Date() }
        )
        .add(to: router) { path, handler in get(router, path, handler) }
        table.set(router.routes.map { ($0.method, $0.path.description) })
        return router
    }
}
