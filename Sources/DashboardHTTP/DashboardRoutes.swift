import Dashboard
import Foundation
import Hummingbird
import JobAPI
import JobKinds
import Logging
import NIOCore
import ObjectStorage
import Queue
import Synchronization

/// The dashboard's pages under `/ui/` (docs/dashboard.md), as the routes of the `/ui` group:
/// signed in with an API key through a session cookie, not a bearer header; every action a form
/// POST with the session's token. The key's scope and tenancy are the API's: a read key looks and
/// never acts, a key that is not admin sees its own jobs only. The checks are the group's
/// middleware (`DashboardSessions`), by the sub-group a route is added to.
package struct DashboardRoutes: Sendable {
    let store: any JobDatabase
    /// `serve`'s roots: where a tenant's output files are on this host.
    let confinement: PathConfinement
    let pages = DashboardPages()
    /// `Secure` on the cookies: the server speaks TLS (or says it is behind a proxy that does).
    let secureCookies: Bool
    /// Failed sign-ins, counted as failed API keys are (the same counts).
    let failures: AuthFailures
    /// The servers' key for the sign-in form's token (`SessionCookie.signInToken`).
    let signInKey = SignInKey()
    /// Requests per key, as `serve --rate-limit` allows the API (`nil`: no limit): a page
    /// costs a render, so one key must not be able to take the server.
    let keyLimiter: RateLimiter?
    let counts = StatusCountCache(lifetime: .seconds(10))
    /// The object store a job's files in a bucket are read from (`APIConfiguration.objectStore`).
    let objects: S3ClientProvider
    /// Responses reading from the bucket at once, in all and per key.
    let objectReads = FileReadLimit(total: 16, perKey: 8)
    /// Responses reading local files at once, in all and per key.
    let localReads = FileReadLimit(total: 32, perKey: 8)
    /// The server's one watch (the pages' live updates share it with the API's streams).
    let watch: JobWatch
    /// The keys' newest jobs as page streams read them: once per key per wake-up.
    let newestReads = NewestJobReads()
    /// How long one page's event stream lasts before the browser reconnects.
    let maximumStream: Duration
    /// How often a page's event stream checks that its session still holds (15 of the
    /// watch's ticks: 15 s by default).
    let sessionCheckInterval: Duration
    let logger: Logger
    let now: @Sendable () -> Date

    /// The dashboard of the server whose API is `api`: its store, roots, cookies' `Secure`, rate
    /// limit, failed-key counts and watch.
    package init(_ api: APIRoutes, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }) {
        let configuration = api.configuration
        store = configuration.store
        confinement = configuration.paths
        secureCookies = configuration.secureCookies
        failures = api.failures
        keyLimiter = configuration.rateLimit.map(RateLimiter.init)
        watch = api.watch
        objects =
            configuration.objectStore
            ?? S3ClientProvider { () throws(S3Error) -> S3Client in
                throw S3Error(.configuration, "this server is not configured to read an object store")
            }
        maximumStream = configuration.maximumStream
        sessionCheckInterval = configuration.watchInterval * 15
        self.logger = logger
        self.now = now
    }

    /// The routes, as a collection for the `/ui` group of the server's router: the sign-in page
    /// and the assets open; the pages behind a session; the job actions behind a session and a
    /// key that may act.
    package func routes() -> RouteCollection<DashboardRequestContext> {
        let ui = RouteCollection(context: DashboardRequestContext.self)
        ui.getAndHead("/signin") { request, context in try await signInPage(request, context, error: nil) }
        ui.post("/signin") { request, context in try await signIn(request, context) }
        ui.getAndHead("/assets/{name}") { _, context in try asset(context) }

        // The router takes `/ui` and `/ui/` as one path; relative links need the slash, so
        // `/ui` is sent to `ui/` before its session is looked at.
        ui.group().add(middleware: DirectorySlash())
            .add(middleware: DashboardSessions(routes: self, signedOut: .signIn, acting: .read))
            .getAndHead("") { request, context in try await jobs(request, context.signedIn()) }

        let pages = ui.group().add(middleware: DashboardSessions(routes: self, signedOut: .signIn, acting: .read))
        pages.getAndHead("/fleet") { _, context in try await fleet(context.signedIn()) }
        pages.getAndHead("/jobs/{id}") { request, context in try await job(request, context, context.signedIn()) }
        pages.getAndHead("/jobs/{id}/files/{name}") { request, context in
            try await file(request, context, context.signedIn())
        }
        pages.post("/signout") { request, context in try await signOut(request, context.signedIn()) }

        ui.group().add(middleware: DashboardSessions(routes: self, signedOut: .unauthorized, acting: .read))
            .getAndHead("/events") { request, context in try await events(request, context, context.signedIn()) }

        let actions = ui.group().add(
            middleware: DashboardSessions(routes: self, signedOut: .signIn, acting: .submit)
        )
        actions.post("/bulk") { request, context in try await bulk(request, context.signedIn()) }
        for action in ["cancel", "retry"] {
            actions.post("/jobs/{id}/\(action)") { _, context in try await act(action, context, context.signedIn()) }
        }
        actions.post("/jobs/{id}/deliveries/{delivery}/redeliver") { _, context in
            try await redeliver(context, context.signedIn())
        }
        return ui
    }

    // MARK: Pages

    func jobs(_ request: Request, _ session: Session) async throws -> Response {
        let parameters = request.uri.queryParameters
        let typed = parameters.get("q") ?? JobFilterQuery.notEnded
        var query = JobQuery(owner: session.owner, limit: 50)
        query.topLevelOnly = true
        var problem: String?
        var shown = typed
        do {
            let filter = try JobFilterQuery(typed, now: now())
            query.conditions = filter.conditions
            shown = filter.text
        } catch { problem = error.description }
        if let cursor = parameters.get("after") {
            guard let value = ListCursor.decode(cursor) else {
                return refusal(session, "That page link is not one this dashboard made.", status: .badRequest)
            }
            query.after = value
        }
        var jobs: [Job] = []
        if problem == nil {
            query.limit += 1
            jobs = try await store.jobs(query)
        }
        let more = jobs.count == query.limit
        if more { jobs.removeLast() }
        let link = { (filter: String) in session.links.root + "?q=" + Self.queryEscaped(filter) }
        // An admin counts the whole queue; another key its own jobs.
        let owner = session.owner
        let counted = try await counts.read(owner: owner) { try await store.statusCounts(owner: owner) }
        var frame = session.frame
        frame.flash = Self.bulkFlash(
            ["done", "count", "skipped"].reduce(into: [:]) { fields, name in fields[name] = parameters.get(name) }
        )
        let view = JobsView(
            frame: frame,
            q: shown,
            error: problem,
            tabs: JobsView.tabs(q: shown, counts: counted.counts, link: link),
            countsAge: DashboardText.short(counted.at),
            jobs: jobs,
            next: more ? jobs.last.map { link(shown) + "&after=" + ListCursor.encode($0) } : nil,
            newest: try await newestJob(owner: owner)
        )
        return html(pages.render(view, as: "jobs"))
    }

    func job(_ request: Request, _ context: DashboardRequestContext, _ session: Session) async throws -> Response {
        guard let id = try? JobRoutes.jobID(context), let job = try await store.job(id),
            JobRoutes.visible(job, to: session.key)
        else {
            return refusal(session, "There is no such job, or it is not yours to see.", status: .notFound)
        }
        var children: [Job] = []
        if job.children != nil {
            var query = JobQuery(parent: job.id, limit: 500)
            query.topLevelOnly = false
            children = try await store.jobs(query).sorted { ($0.childIndex ?? 0) < ($1.childIndex ?? 0) }
        }
        let audit = try await store.auditRecords(job: job.id, limit: 50)
        // A tenant's place in line counts its own jobs; an admin's the whole queue.
        let tenant = session.owner
        var frame = session.frame
        frame.flash = request.uri.queryParameters.get("done").flatMap(Self.flash)
        var view = JobView(
            frame: frame,
            csrf: session.row.csrfToken,
            job: job,
            children: children,
            audit: audit,
            files: Self.fileNames(of: job).filter { hasLocalFile($0, of: job) || objectFile($0, of: job) != nil },
            canAct: session.key.scope >= .submit,
            now: now(),
            ahead: job.status == .unknown && job.children == nil
                ? try await store.queuedAhead(of: job, owner: tenant, at: now(), limit: JobView.aheadLimit) : nil,
            aheadOwnOnly: tenant != nil,
            leaseExpiry: job.status == .reading ? try await store.leaseExpiry(of: job.id) : nil,
            attempts: job.attempt > 0 ? try await store.attempts(of: job.id) : []
        )
        view.waveform = waveform(of: job)
        view.deliveries = try await store.deliveries(job: job.id, limit: JobRoutes.deliveriesPerJob).map {
            JobView.Delivery($0, job: job.id, links: session.links, canRedeliver: session.key.scope >= .submit)
        }
        return html(pages.render(view, as: "job"))
    }

    func fleet(_ session: Session) async throws -> Response {
        guard session.key.scope == .admin else {
            return refusal(
                session,
                "The fleet page is for admin keys: it shows every tenant's jobs.",
                status: .forbidden
            )
        }
        let date = now()
        let last = MinuteSample.minute(of: date)
        let minutes = MinuteSample.zeroFilled(
            try await store.minutes(from: last - 59, through: last),
            from: last - 59,
            through: last
        )
        let frame = PageFrame.signedIn(
            root: session.links.root,
            key: session.key,
            csrf: session.row.csrfToken,
            onJobs: false,
            onFleet: true
        )
        let workers = try await store.workers()
        let ids = workers.filter { $0.stoppedAt == nil }.flatMap(\.runningJobs).prefix(JobWatch.chunk)
        let running = ids.isEmpty ? [] : try await store.jobs(JobQuery(ids: Array(ids), limit: ids.count))
        let view = FleetView(frame: frame, workers: workers, runningJobs: running, minutes: minutes, now: date)
        return html(pages.render(view, as: "fleet"))
    }

    /// What a `?done=` after an action says (fixed texts: nothing from the URL is shown).
    static func flash(_ done: String) -> String? {
        switch done {
        case "cancelled": "Cancelled."
        case "cancelling": "Cancel requested: the worker stops at its next heartbeat."
        case "retried": "Queued again."
        case "ended": "It had ended already: nothing to cancel."
        case "not-retryable": "Only failed or cancelled jobs can be retried."
        case "redelivered": "The webhook will be sent again."
        case "delivering": "That webhook is being sent right now; redeliver it once it is done."
        default: nil
        }
    }

    // MARK: Actions

    /// Cancels or retries a job (the session's key may act: `DashboardSessions`).
    func act(_ action: String, _ context: DashboardRequestContext, _ session: Session) async throws -> Response {
        guard let id = try? JobRoutes.jobID(context), let job = try await store.job(id),
            JobRoutes.visible(job, to: session.key)
        else {
            return refusal(session, "There is no such job, or it is not yours to act on.", status: .notFound)
        }
        let done: String
        do {
            if action == "cancel" {
                switch try await store.cancel(id) {
                case .cancelled: done = "cancelled"
                case .requested: done = "cancelling"
                }
            } else {
                _ = try await store.retry(id, force: false)
                done = "retried"
            }
        } catch let error as JobStoreError where error.code == .conflict {
            done = action == "cancel" ? "ended" : "not-retryable"
        }
        try await store.recordAudit(
            AuditRecord(at: now(), keyID: session.key.id, action: action, jobID: id, outcome: done)
        )
        logger.info(
            "Dashboard action",
            metadata: ["key.id": "\(session.key.id)", "action": "\(action)", "job": "\(id)", "outcome": "\(done)"]
        )
        return Self.redirect(session.links.job(id.rawValue) + "?done=\(done)")
    }
}
