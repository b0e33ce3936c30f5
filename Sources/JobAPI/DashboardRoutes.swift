import Dashboard
import Foundation
import Hummingbird
import JobKinds
import Logging
import NIOCore
import ObjectStorage
import Queue
import Synchronization

/// The dashboard's pages under `/ui/` (docs/dashboard.md): signed in with an API key through a
/// session cookie, not a bearer header; every action a form POST with the session's token.
/// The key's scope and tenancy are the API's: a read key looks and never acts, a key that is
/// not admin sees its own jobs only.
struct DashboardRoutes: Sendable {
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
    /// The object store a job's files in a bucket are read from (the environment's).
    var objects: S3ClientProvider = .environment
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

    /// Whether `path` is the dashboard's (`/ui`, `/ui/…`).
    static func owns(_ path: String) -> Bool { path == "/ui" || path.hasPrefix("/ui/") }

    func add(to router: Router<APIRequestContext>, get: (RouterPath, @escaping Handler) -> Void) {
        // The router takes `/ui` and `/ui/` as one path; relative links need the slash.
        get("/ui") { request, context in
            guard request.uri.path.hasSuffix("/") else { return Self.redirect("ui/") }
            return try await signedIn(request, context, root: "") { try await jobs(request, $0) }
        }
        router.post("/ui/bulk") { request, context in
            try await signedIn(request, context, root: "", action: true) {
                try await bulk(request, context, $0)
            }
        }
        get("/ui/fleet") { request, context in
            try await signedIn(request, context, root: "") { try await fleet($0) }
        }
        get("/ui/signin") { request, context in try await signInPage(request, error: nil) }
        router.post("/ui/signin") { request, context in try await signIn(request, context) }
        router.post("/ui/signout") { request, context in
            try await signedIn(request, context, root: "", action: true) { try await signOut(request, $0) }
        }
        get("/ui/assets/{name}") { _, context in try asset(context) }
        get("/ui/events") { request, context in
            try await signedIn(request, context, root: "", stream: true) { try await events(request, context, $0) }
        }
        get("/ui/jobs/{id}") { request, context in
            try await signedIn(request, context, root: "../") { try await job(request, context, $0) }
        }
        get("/ui/jobs/{id}/files/{name}") { request, context in
            try await signedIn(request, context, root: "../../../") { try await file(request, context, $0) }
        }
        router.post("/ui/jobs/{id}/deliveries/{delivery}/redeliver") { request, context in
            try await signedIn(request, context, root: "../../../../", action: true) {
                try await redeliver(context, $0)
            }
        }
        for action in ["cancel", "retry"] {
            router.post("/ui/jobs/{id}/\(action)") { request, context in
                try await signedIn(request, context, root: "../../", action: true) {
                    try await act(action, request, context, $0)
                }
            }
        }
    }

    typealias Handler = @Sendable (Request, APIRequestContext) async throws -> Response

    /// Who is signed in on a request, and with what.
    struct Session: Sendable {
        let key: APIKey
        let row: DashboardSession
        let root: String
        /// An action's form fields, in order (read once, with its token).
        var form: [(String, String)] = []
        var frame: PageFrame {
            PageFrame.signedIn(root: root, key: key, csrf: row.csrfToken, onJobs: true)
        }

        /// The last value of a form field.
        func field(_ name: String) -> String? { form.last { $0.0 == name }?.1 }
    }

    // MARK: Sessions

    /// Runs `page` for the signed-in session, or sends the browser to sign in. An action (a
    /// POST) also needs the session's form token, and is refused (403) without it.
    func signedIn(
        _ request: Request,
        _ context: APIRequestContext,
        root: String,
        action: Bool = false,
        stream: Bool = false,
        page: (Session) async throws -> Response
    ) async throws -> Response {
        if action, !Self.fromThisOrigin(request) {
            logger.warning("Refused a dashboard action from another origin", metadata: ["path": "\(request.uri.path)"])
            return refusal(root: root, "This form did not come from this dashboard.", status: .forbidden)
        }
        let cookie = SessionCookie.value(named: SessionCookie.name(secure: secureCookies), in: request.headers[.cookie])
        guard let cookie, let row = try await store.session(idHash: SessionCookie.hash(cookie), at: now()),
            let key = try await store.apiKey(id: row.keyID)?.key, key.revokedAt == nil
        else {
            if action { return refusal(root: root, "Your session has ended. Sign in again.", status: .forbidden) }
            // An event stream's `EventSource` stops at a 401 (a redirect it would follow).
            if stream { return Response(status: .unauthorized, headers: [.cacheControl: "no-store"]) }
            return Self.redirect("\(root)signin")
        }
        if let wait = keyLimiter?.take(key.id) {
            var response = refusal(
                frame: PageFrame(root: root),
                "Too many requests from this key: wait \(wait) s.",
                status: .tooManyRequests
            )
            response.headers[.retryAfter] = "\(wait)"
            return response
        }
        var session = Session(key: key, row: row, root: root)
        if action {
            session.form = try await Self.formPairs(request, context)
            guard let token = session.field("csrf"), SessionCookie.sameToken(token, row.csrfToken) else {
                logger.warning("Refused a dashboard action without its form token", metadata: ["key.id": "\(key.id)"])
                return refusal(
                    root: root,
                    "This form has expired or did not come from this dashboard.",
                    status: .forbidden
                )
            }
        }
        let response = try await page(session)
        // A page costs its size too, as the API's responses do: past 16 KB each 16 KB more is
        // another token of the key's (files are bounded by `FileReadLimit` instead).
        if let keyLimiter, response.headers[.contentType]?.hasPrefix("text/html") == true,
            let bytes = response.body.contentLength, bytes > KeyAuthentication.bytesPerToken
        {
            let tokens = Double(bytes - KeyAuthentication.bytesPerToken) / Double(KeyAuthentication.bytesPerToken)
            keyLimiter.charge(key.id, tokens: tokens)
        }
        return response
    }

    // MARK: Pages

    func jobs(_ request: Request, _ session: Session) async throws -> Response {
        let parameters = request.uri.queryParameters
        let typed = parameters.get("q") ?? JobFilterQuery.notEnded
        var query = JobQuery(owner: session.key.scope == .admin ? nil : session.key.id, limit: 50)
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
        let link = { (filter: String) in "?q=" + Self.queryEscaped(filter) }
        // An admin counts the whole queue; another key its own jobs.
        let owner = session.key.scope == .admin ? nil : session.key.id
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

    func job(_ request: Request, _ context: APIRequestContext, _ session: Session) async throws -> Response {
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
        let tenant = session.key.scope == .admin ? nil : session.key.id
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
            JobView.Delivery($0, job: job.id, canRedeliver: session.key.scope >= .submit)
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
            root: session.root,
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

    func act(
        _ action: String,
        _ request: Request,
        _ context: APIRequestContext,
        _ session: Session
    ) async throws -> Response {
        guard session.key.scope >= .submit else {
            return refusal(
                session,
                "This key is read-only: it can look at jobs but not act on them.",
                status: .forbidden
            )
        }
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
        return Self.redirect("../\(id.rawValue)?done=\(done)")
    }
}
