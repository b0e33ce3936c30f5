import Foundation
import Queue

/// One job's page.
public struct JobView: Sendable {
    public let root: String
    public let signedIn: PageFrame.SignedIn?
    public let flash: String?
    public let csrf: String
    /// The jobs whose changes refresh the page (the job, and its parts not ended yet),
    /// separated by spaces: what its event stream watches.
    public let watch: String

    public let id: String
    public let shortID: String
    public let status: String
    public let statusLabel: String
    public let percent: Int?
    public let waiting: String?
    /// A running job's pace: fps, speed and time left (`JobPace`).
    public let pace: String?
    /// A waveform job's peaks drawn as SVG markup (`WaveformSVG`), set by the page's route.
    public var waveform: String?
    /// A split job's parts as one bar (`PartsBar`).
    public let partsBar: String?
    public let error: ErrorLine?
    public let kind: String
    public let preset: String
    public let input: String
    public let output: String
    public let priority: Int
    public let attempt: Int
    public let maxAttempts: Int
    public let worker: String?
    public let parent: String?
    public let timeline: [Event]
    public let tracks: [Track]
    public let hasTracks: Bool
    public let children: [Child]
    public let hasChildren: Bool
    public let canAct: Bool
    public let canCancel: Bool
    public let canRetry: Bool
    public let audit: [Audit]
    public let hasAudit: Bool
    /// The output shown inline: a video (an export, a ladder's master playlist), pictures.
    public let video: String?
    public let images: [Image]
    public let hasImages: Bool
    /// Every file, as links.
    public let files: [FileLink]
    public let hasFiles: Bool

    /// The job's webhook deliveries, newest first.
    public var deliveries: [Delivery] = [] { didSet { hasDeliveries = !deliveries.isEmpty } }
    /// Stored, not computed: the templates see stored properties only.
    public private(set) var hasDeliveries = false

    public struct Delivery: Sendable {
        public let id: String
        public let type: String
        public let url: String
        public let status: String
        public let attempts: Int
        /// The last answer: `HTTP 200`, or why there was none.
        public let response: String
        public let latency: String
        /// The form's action, when the key may redeliver it (not while it is being sent).
        public let redeliver: String?

        public init(
            id: String,
            type: String,
            url: String,
            status: String,
            attempts: Int,
            response: String,
            latency: String,
            redeliver: String?
        ) {
            self.id = id
            self.type = type
            self.url = url
            self.status = status
            self.attempts = attempts
            self.response = response
            self.latency = latency
            self.redeliver = redeliver
        }
    }

    public struct Image: Sendable {
        public let url: String
        public let alt: String
    }

    public struct FileLink: Sendable {
        public let url: String
        public let name: String
    }

    public struct ErrorLine: Sendable {
        public let code: String
        public let message: String
    }

    public struct Track: Sendable {
        public let index: Int
        public let mediaType: String
        public let codec: String
        public let status: String
        public let read: Int64
        public let written: Int64
    }

    public struct Event: Sendable {
        public let at: String
        public let atShort: String
        public let what: String
    }

    public struct Child: Sendable {
        public let id: String
        public let label: String
        public let status: String
        public let statusLabel: String
        public let worker: String
    }

    public struct Audit: Sendable {
        public let at: String
        public let atShort: String
        public let action: String
        public let keyID: String
        public let outcome: String
    }

    /// `canAct`: the session's key may cancel and retry (submit or admin scope).
    public init(
        frame: PageFrame,
        csrf: String,
        job: Job,
        children: [Job],
        audit: [AuditRecord],
        files: [String] = [],
        canAct: Bool,
        now: Date,
        ahead: Int? = nil,
        aheadOwnOnly: Bool = false,
        leaseExpiry: Date? = nil,
        attempts: [JobAttempt] = []
    ) {
        root = frame.root
        signedIn = frame.signedIn
        flash = frame.flash
        self.csrf = csrf
        watch = LiveVersion.watchList([job] + children.filter { !$0.status.isTerminal })
        id = job.id.rawValue
        shortID = String(job.id.rawValue.suffix(12))
        status = job.status.rawValue
        statusLabel = DashboardText.status(job.status)
        percent = DashboardText.percent(job)
        waiting = Self.waiting(job, now: now, ahead: ahead, aheadOwnOnly: aheadOwnOnly, leaseExpiry: leaseExpiry)
        pace = JobPace(job, now: now)?.text
        error = job.error.map { ErrorLine(code: $0.code.rawValue, message: $0.message) }
        kind = job.kind.rawValue
        preset = job.preset
        input = job.displayInput
        output = job.displayOutput
        priority = job.priority
        attempt = job.attempt
        maxAttempts = job.maxAttempts
        worker = job.worker
        parent = job.parent?.rawValue
        timeline = Self.timeline(job, attempts: attempts)
        tracks = job.tracks.map {
            Track(
                index: $0.index,
                mediaType: $0.mediaType,
                codec: $0.codec ?? "",
                status: DashboardText.status($0.status),
                read: $0.read,
                written: $0.written
            )
        }
        hasTracks = !job.tracks.isEmpty
        self.children = children.map { child in
            Child(
                id: child.id.rawValue,
                label: "Part \((child.childIndex ?? 0) + 1)",
                status: child.status.rawValue,
                statusLabel: DashboardText.status(child.status),
                worker: child.worker ?? ""
            )
        }
        hasChildren = !children.isEmpty
        partsBar = PartsBar.draw(children)
        self.canCancel = canAct && !job.status.isTerminal && !job.cancelRequested
        self.canRetry = canAct && (job.status == .failed || job.status == .cancelled)
        self.canAct = self.canCancel || self.canRetry
        self.audit = audit.map {
            Audit(
                at: DashboardText.timestamp($0.at),
                atShort: DashboardText.short($0.at),
                action: $0.action,
                keyID: $0.keyID,
                outcome: $0.outcome
            )
        }
        hasAudit = !audit.isEmpty
        // Every link from the page's root, as the template's own (`DashboardLinks`).
        let filesRoot = "\(frame.root)jobs/\(job.id.rawValue)/files/"
        let links = files.prefix(Self.shownFiles).map { name in
            FileLink(url: filesRoot + DashboardText.urlEscaped(name), name: name)
        }
        self.files = Array(links)
        hasFiles = !links.isEmpty
        video =
            links.first { $0.name == "master.m3u8" }?.url
            ?? links.first { ["mp4", "m4v", "mov"].contains(($0.name as NSString).pathExtension.lowercased()) }?.url
        images = links.filter {
            ["jpg", "jpeg", "png", "webp"].contains(($0.name as NSString).pathExtension.lowercased())
        }
        .prefix(Self.shownImages).map { Image(url: $0.url, alt: "\($0.name) of job \(job.id.rawValue)") }
        hasImages = !images.isEmpty
    }

    /// At most this many files are linked, and pictures shown, on a job's page.
    static let shownFiles = 200
    static let shownImages = 24

    /// Why a job that has not ended is where it is.
    /// The most queued jobs counted before one (`DashboardStore.queuedAhead`).
    public static let aheadLimit = 1000

    /// `aheadOwnOnly`: `ahead` counts the key's own jobs only (a tenant's page: the others'
    /// volume is not theirs to learn).
    static func waiting(
        _ job: Job,
        now: Date,
        ahead: Int? = nil,
        aheadOwnOnly: Bool = false,
        leaseExpiry: Date? = nil
    ) -> String? {
        if job.cancelRequested && !job.status.isTerminal {
            return "Cancelling: the worker stops at its next heartbeat."
        }
        switch job.status {
        case .unknown where job.runAt > now:
            return "Waiting to be retried: no worker takes it before \(DashboardText.short(job.runAt))."
        case .unknown where job.children != nil:
            return "Waiting for its parts to finish."
        case .unknown:
            let place =
                switch (ahead, aheadOwnOnly) {
                case (nil, _): ""
                case (0?, true): " None of your jobs comes before it (other keys' jobs are not counted)."
                case (let count?, true) where count >= aheadLimit:
                    " \(aheadLimit) or more of your jobs come before it (other keys' jobs are not counted)."
                case (1?, true): " 1 of your jobs comes before it (other keys' jobs are not counted)."
                case (let count?, true): " \(count) of your jobs come before it (other keys' jobs are not counted)."
                case (0?, false): " It is next."
                case (let count?, false) where count >= aheadLimit: " \(aheadLimit) or more jobs come before it."
                case (1?, false): " 1 job comes before it."
                case (let count?, false): " \(count) jobs come before it."
                }
            return "Waiting for a worker: queued jobs run by priority, then oldest first." + place
        case .reading:
            let running = "Running on \(job.worker ?? "a worker"), attempt \(job.attempt) of \(job.maxAttempts)."
            guard let leaseExpiry else { return running }
            let lease =
                leaseExpiry > now
                ? " Its lease runs to \(DashboardText.short(leaseExpiry)); each heartbeat renews it."
                : " Its lease ran out at \(DashboardText.short(leaseExpiry)): another worker will take it over."
            return running + lease
        default:
            return nil
        }
    }

    /// Submitted; each attempt that ended badly (`attempts`), started and how it ended; then
    /// the job's own attempt, unless it is one of those (a job that failed for good).
    static func timeline(_ job: Job, attempts: [JobAttempt] = []) -> [Event] {
        var events = [(job.createdAt, "Submitted")]
        for attempt in attempts {
            let worker = attempt.worker ?? "a worker"
            if let started = attempt.startedAt {
                events.append((started, "Attempt \(attempt.attempt) started on \(worker)"))
            }
            let error =
                attempt.errorCode.map { code in ": \(code.rawValue)" + (attempt.errorMessage.map { " (\($0))" } ?? "") }
                ?? ""
            let ended =
                switch attempt.outcome {
                case JobAttempt.takenOver: "Attempt \(attempt.attempt) on \(worker) lost its lease" + error
                case JobStatus.unknown.rawValue: "Attempt \(attempt.attempt) on \(worker) failed, queued again" + error
                case let outcome:
                    "Attempt \(attempt.attempt) on \(worker) ended: "
                        + DashboardText.status(JobStatus(rawValue: outcome) ?? .failed) + error
                }
            events.append((attempt.endedAt, ended))
        }
        if attempts.contains(where: { $0.attempt == job.attempt }) {
            return events.map {
                Event(at: DashboardText.timestamp($0.0), atShort: DashboardText.short($0.0), what: $0.1)
            }
        }
        if let started = job.startedAt {
            events.append((started, "Started on \(job.worker ?? "a worker") (attempt \(job.attempt))"))
        }
        if let finished = job.finishedAt {
            let outcome =
                job.error.map { "\(DashboardText.status(job.status).capitalized): \($0.code.rawValue)" }
                ?? DashboardText.status(job.status).capitalized
            events.append((finished, outcome))
        }
        return events.map { Event(at: DashboardText.timestamp($0.0), atShort: DashboardText.short($0.0), what: $0.1) }
    }
}
