import Foundation
import Hummingbird
import JobKinds
import JobctlCore
import Logging
import Media
import NIOCore
import ObjectStorage
import Observability
import Prometheus
import Queue
import SafeHTTP
import ServiceLifecycle
import Synchronization

/// The request context: the API key the request was authenticated with (the keyed group's
/// routes: `KeyAuthentication`), and a small body limit.
public struct APIRequestContext: RequestContext, RemoteAddressRequestContext, HeadRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var key: APIKey?
    /// The peer of the connection (a proxy's address behind a reverse proxy: `X-Forwarded-For`
    /// is read only from `--trusted-proxy` peers, by `TrustedProxies`).
    public let remoteAddress: SocketAddress?
    /// Set when the request is a long poll taken below Hummingbird: its wait is parked there.
    package var parkedPoll: (any ParkedPoll)?
    /// Completes when the connection closes (an event stream then gives up its watch at once).
    package let connectionClosed: EventLoopFuture<Void>?
    /// The connection, to stop reading a body that is refused unread (`DeclaredBodyLimit`).
    let channel: (any Channel)?
    /// A `HEAD` request, routed as its `GET` (`HeadRequests`): the route answers without a body.
    package var isHead = false

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
    /// Where the dashboard reads a job's files in a bucket from (`jobctl serve` passes the
    /// environment's client); `nil`: this server reads no bucket, and such a file says so.
    public var objectStore: S3ClientProvider?

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
        trustedProxies: TrustedProxies = TrustedProxies(),
        objectStore: S3ClientProvider? = nil
    ) {
        self.objectStore = objectStore
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
}

/// The API's part of `jobctl serve`'s router (docs/api.md), by group rather than by path:
///
/// - the global middleware every request passes, routed or not (metrics, the error shape, the
///   body limit, the request timeout: `addGlobalMiddleware`);
/// - the open routes, which need no key (`/healthz`, `/openapi.json`, `/metrics` when public);
/// - the keyed group, behind `KeyAuthentication` and the keys' rate limit: `/v1/…`, and
///   `/metrics` when it is not public.
///
/// `APIServer.router` (JobAPIServer) assembles these with the dashboard's `/ui` group, then
/// calls `finish(_:)`. A path no group routes is 404 (405 with `Allow` for a method a routed
/// path does not have), with or without a key.
package struct APIRoutes: Sendable {
    package let configuration: APIConfiguration
    /// The server's one watch of long polls and event streams (the dashboard's pages share it).
    package let watch: JobWatch
    /// Failed keys, counted alike on the API and the dashboard's sign-in form.
    package let failures: AuthFailures
    let table = RouteTable()
    let logger: Logger

    package init(_ configuration: APIConfiguration, watch: JobWatch, logger: Logger) {
        self.configuration = configuration
        self.watch = watch
        self.logger = logger
        failures = AuthFailures(proxies: configuration.trustedProxies)
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

    /// What applies to every request, a path no route has included: counted by route, one error
    /// shape, the body limit, the request timeout.
    package func addGlobalMiddleware(to router: Router<APIRequestContext>) {
        if let registry = configuration.metrics { router.add(middleware: HTTPMetrics(registry: registry)) }
        router.add(middleware: ErrorShape(routes: table, logger: logger))
        router.add(middleware: DeclaredBodyLimit())
        router.add(middleware: RequestTimeout(configuration: configuration))
    }

    /// `/healthz`, `/openapi.json` and `/metrics` on `router`; `/metrics` in the keyed group
    /// unless it is public, where an admin key reads it.
    package func addOpenRoutes(to router: Router<APIRequestContext>, keyed: RouterGroup<APIRequestContext>) {
        router.getAndHead("/openapi.json") { _, _ -> Response in
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
        let publicMetrics = configuration.publicMetrics
        HealthAndMetrics(registry: configuration.metrics) {
            await probe.healthy() ? (true, ["status": "ok"]) : (false, ["status": "database unavailable"])
        }
        .add(
            to: router,
            authorize: { context in
                if !publicMetrics { _ = try JobRoutes.require(.admin, context) }
            },
            beforeMetrics: { [watch] in watchers?.set(Int64(watch.count)) },
            register: { path, handler in
                if path.description == "/metrics" && !publicMetrics {
                    keyed.getAndHead(path, use: handler)
                } else {
                    router.getAndHead(path, use: handler)
                }
            }
        )
    }

    /// The group of every route that needs an API key: `KeyAuthentication` and the keys' rate
    /// limit, then the routes added to it.
    package func keyedGroup(of router: Router<APIRequestContext>) -> RouterGroup<APIRequestContext> {
        router.group().add(
            middleware: KeyAuthentication(
                store: configuration.store,
                cache: configuration.keyCacheLifetime > .zero
                    ? APIKeyCache(lifetime: configuration.keyCacheLifetime) : nil,
                keyLimiter: configuration.rateLimit.map(RateLimiter.init),
                failures: failures,
                logger: logger
            )
        )
    }

    /// The `/v1` routes, in `keyed`.
    package func addVersionOne(to keyed: RouterGroup<APIRequestContext>) {
        let v1 = keyed.group("/v1")
        let jobs = JobRoutes(configuration: configuration, watch: watch)
        v1.post("/jobs", use: jobs.submit)
        v1.getAndHead("/jobs", use: jobs.list)
        v1.getAndHead("/jobs/{id}", use: jobs.show)
        v1.getAndHead("/jobs/{id}/events", use: jobs.events)
        v1.post("/jobs/{id}/cancel", use: jobs.cancel)
        v1.post("/jobs/{id}/retry", use: jobs.retry)
        v1.getAndHead("/jobs/{id}/deliveries", use: jobs.deliveries)
        v1.post("/jobs/{id}/deliveries/{delivery}/redeliver", use: jobs.redeliver)
    }

    /// Records the router's routes, once all are added: what tells 405 from 404 (`ErrorShape`).
    package func finish(_ router: Router<APIRequestContext>) {
        table.set(router.routes.map { ($0.method, $0.path.description) })
    }
}
