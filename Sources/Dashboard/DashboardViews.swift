import Foundation
import Queue

/// The sign-in page.
public struct SignInView: Sendable {
    public let root: String
    public let signedIn: PageFrame.SignedIn? = nil
    public let flash: String?
    /// The sign-in form's own token (its cookie holds the same value).
    public let csrf: String
    public let error: String?

    public init(root: String, csrf: String, error: String?, flash: String? = nil) {
        self.root = root
        self.csrf = csrf
        self.error = error
        self.flash = flash
    }
}

/// A page that only says something (not found, refused).
public struct MessageView: Sendable {
    public let root: String
    public let signedIn: PageFrame.SignedIn?
    public let flash: String?
    public let heading: String
    public let message: String

    public init(frame: PageFrame, heading: String, message: String) {
        root = frame.root
        signedIn = frame.signedIn
        flash = frame.flash
        self.heading = heading
        self.message = message
    }
}

/// How the pages name things.
public enum DashboardText {
    /// The CLI's word for a status (the stored names are AVFoundation's).
    public static func status(_ status: JobStatus) -> String {
        switch status {
        case .unknown: "queued"
        case .reading: "running"
        case .completed: "completed"
        case .failed: "failed"
        case .cancelled: "cancelled"
        }
    }

    /// The longest text a table cell shows: a longer one keeps its start and its end (a file's
    /// name) around an ellipsis, and the job's page shows it whole. A page of 50 jobs with
    /// names of 4,000 characters was 830 KB (issue 42).
    public static let cellCharacters = 120

    /// `text` cut to `cellCharacters`, its start and end kept.
    public static func cell(_ text: String) -> String {
        guard text.count > cellCharacters else { return text }
        let tail = cellCharacters * 2 / 3
        return text.prefix(cellCharacters - tail - 1) + "…" + text.suffix(tail)
    }

    /// `2026-11-27T10:00:00.123Z`, for `<time datetime>`.
    public static func timestamp(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// `11-27 10:00:00` (UTC): short enough for a table cell.
    public static func short(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "MM-dd HH:mm:ss"
        return formatter.string(from: date) + " UTC"
    }

    /// `text` percent-encoded for a URL the pages make: everything but ASCII letters, digits and
    /// `-._~` (plus `alsoKeeping`: `:,` in a `?q=` filter, where they read better).
    public static func urlEscaped(_ text: String, alsoKeeping kept: String = "") -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        allowed.insert(charactersIn: kept)
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// A percentage for a `<progress>`, only while there is some progress to show.
    static func percent(_ job: Job) -> Int? {
        job.status == .reading || (job.status == .unknown && job.progress > 0)
            ? JobProgress.wholePercent(job.progress) : nil
    }
}

/// The jobs page.
public struct JobsView: Sendable {
    public let root: String
    public let signedIn: PageFrame.SignedIn?
    public let flash: String?
    public let q: String
    public let error: String?
    public let tabs: [Tab]
    public let countsAge: String?
    public let jobs: [Row]
    /// The link to the next (older) page, if there is one.
    public let next: String?
    /// The jobs shown that have not ended, separated by spaces: what the page's event stream
    /// watches (with new submissions).
    public let watch: String
    /// The key's newest job when the page was made: the stream tells of a newer one.
    public let newest: String
    /// The session's form token, and whether its key may act (the bulk actions).
    public let csrf: String
    public let canAct: Bool

    public struct Tab: Sendable {
        public let label: String
        public let link: String
        public let current: Bool
        public let count: Int?
    }

    public struct Row: Sendable {
        public let id: String
        public let shortID: String
        public let status: String
        public let statusLabel: String
        public let percent: Int?
        public let errorCode: String?
        public let kind: String
        public let preset: String
        public let input: String
        public let worker: String?
        public let created: String
        public let createdShort: String

        public init(_ job: Job) {
            id = job.id.rawValue
            shortID = String(job.id.rawValue.suffix(12))
            status = job.status.rawValue
            statusLabel = DashboardText.status(job.status)
            percent = DashboardText.percent(job)
            errorCode = job.error?.code.rawValue
            kind = job.kind.rawValue
            preset = DashboardText.cell(job.preset)
            input = DashboardText.cell(job.displayInput)
            worker = job.worker.map(DashboardText.cell)
            created = DashboardText.timestamp(job.createdAt)
            createdShort = DashboardText.short(job.createdAt)
        }
    }

    public init(
        frame: PageFrame,
        q: String,
        error: String?,
        tabs: [Tab],
        countsAge: String?,
        jobs: [Job],
        next: String?,
        newest: JobID? = nil
    ) {
        csrf = frame.signedIn?.csrf ?? ""
        canAct = frame.signedIn.map { $0.scope != APIScope.read.rawValue } ?? false
        root = frame.root
        signedIn = frame.signedIn
        flash = frame.flash
        self.q = q
        self.error = error
        self.tabs = tabs
        self.countsAge = countsAge
        self.jobs = jobs.map(Row.init)
        self.next = next
        watch = LiveVersion.watchList(jobs.filter { !$0.status.isTerminal })
        self.newest = newest?.rawValue ?? ""
    }

    /// The status tabs: the default view (not ended), each status, and everything; the one
    /// whose filter is `q` is current. `link` makes a page's URL for a filter.
    public static func tabs(q: String, counts: [JobStatus: Int]?, link: (String) -> String) -> [Tab] {
        var tabs = [
            (
                label: "Not ended", filter: JobFilterQuery.notEnded,
                count: counts.map { $0[.unknown, default: 0] + $0[.reading, default: 0] }
            )
        ]
        for status in JobStatus.allCases {
            let name = DashboardText.status(status)
            tabs.append(
                (
                    name.prefix(1).uppercased() + name.dropFirst(), "status:\(name)",
                    counts.map { $0[status, default: 0] }
                )
            )
        }
        tabs.append(("All", "", counts.map { $0.values.reduce(0, +) }))
        return tabs.map { Tab(label: $0.label, link: link($0.filter), current: $0.filter == q, count: $0.count) }
    }
}

/// The confirmation of a bulk action: how many jobs, which (the first few), and the same form
/// again with `confirm=yes`.
public struct ConfirmView: Sendable {
    public let root: String
    public let signedIn: PageFrame.SignedIn?
    public let flash: String?
    public let csrf: String
    public let action: String
    public let verb: String
    public let target: String
    public let q: String
    public let count: Int
    /// "s" unless there is one job.
    public let plural: String
    public let ids: [String]
    public let shown: [String]
    public let more: Int?
    public let limited: Bool
    public let nothing: Bool
    public let backLink: String

    public init(frame: PageFrame, csrf: String, action: String, target: String, q: String, ids: [JobID], limited: Bool)
    {
        root = frame.root
        signedIn = frame.signedIn
        flash = frame.flash
        self.csrf = csrf
        self.action = action
        verb = action == "cancel" ? "Cancel" : "Retry"
        self.target = target
        self.q = q
        count = ids.count
        plural = ids.count == 1 ? "" : "s"
        self.ids = target == "selected" ? ids.map(\.rawValue) : []
        shown = ids.prefix(20).map(\.rawValue)
        more = ids.count > 20 ? ids.count - 20 : nil
        self.limited = limited
        nothing = ids.isEmpty
        backLink = frame.root + "?q=" + DashboardText.urlEscaped(q, alsoKeeping: ":,")
    }
}

/// What a page has seen of a job, as a short token: its status, attempt, worker, cancel request
/// and whole percent. A page sends the tokens of the jobs it shows with its event stream, and
/// the stream tells it of any job whose token differs, from the start: a change between the
/// page's render and the stream's start is not lost. The fields are those the API's event
/// streams compare (`EventStream.Seen` in JobAPI): change both.
public enum LiveVersion {
    public static func of(_ job: Job) -> String {
        let seen = [
            job.status.rawValue, "\(job.attempt)", job.worker ?? "", job.cancelRequested ? "c" : "",
            "\(JobProgress.wholePercent(job.progress))",
        ]
        .joined(separator: "\u{1}")
        // FNV-1a: a fingerprint, not a secret (the page shows all of it anyway).
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seen.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash, radix: 36)
    }

    /// `ID.TOKEN` for each job, separated by spaces: a page's `data-watch`.
    public static func watchList(_ jobs: some Sequence<Job>) -> String {
        jobs.prefix(100).map { "\($0.id.rawValue).\(of($0))" }.joined(separator: " ")
    }
}
