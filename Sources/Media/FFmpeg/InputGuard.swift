import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

/// Every file and URL FFmpeg opens for one input passes here (`AVFormatContext.io_open`):
/// the input itself, and what an HLS playlist or a DASH manifest names (docs/security.md).
///
/// A manifest can name anything: another tenant's file, `/etc/passwd`, a host on the private
/// network. So an input read from a local path may open only files inside the input's own
/// directory (symbolic links resolved, no other protocol), and one read from a URL only URLs
/// on its own origin (scheme, host and port: the address guard checked that host), with the
/// same HTTP options as the input. What is refused, and a named file that fails to open, is
/// kept: FFmpeg's playlist demuxers skip a segment that does not open, and an export missing
/// a segment must fail, not complete short.
final class InputGuard: @unchecked Sendable {
    typealias Open =
        @convention(c) (
            UnsafeMutablePointer<AVFormatContext>?,
            UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?,
            UnsafePointer<CChar>?,
            Int32,
            UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32

    enum Scope: Equatable {
        /// A resolved directory.
        case directory(String)
        /// Lowercased scheme and host, and the port.
        case origin(scheme: String, host: String, port: Int)
    }

    let scope: Scope
    /// How the input is named in messages.
    let shown: String
    /// Set to abort the reading (cancellation).
    let interrupt: AtomicFlag
    /// FFmpeg's own `io_open`, called for what is allowed.
    private var next: Open?
    /// What went wrong first.
    private enum Problem {
        case refused(String)
        /// With FFmpeg's code.
        case unopened(String, Int32)
    }

    private let problem = Mutex<Problem?>(nil)
    /// The first piece of the media a playlist reader went on without (it only warns), and how
    /// far the packets read had reached then (microseconds). FFmpeg's DASH reader also asks for
    /// a segment past the last one: there a skip with no media after it is the end, not a hole
    /// (an HLS playlist names only what it has: every skip there is a hole).
    private let skipped = Mutex<(what: String, at: Int64)?>(nil)
    /// How far the packets read have reached (microseconds); written by the demuxing thread.
    private let reached = Atomic<Int64>(.min)
    /// Whether `problem` is set: asked by the interrupt callback, on every I/O operation.
    private let hasProblem = Atomic(false)
    /// How many opens were asked for: the first is the input itself, whose failure the
    /// caller reports.
    private let opens = Mutex(0)

    /// - Parameter url: what FFmpeg opens: `file:/…` or an `http(s)` URL.
    init(url: String, shown: String, interrupt: AtomicFlag) {
        self.shown = shown
        self.interrupt = interrupt
        if MediaLocation.isHTTP(url) {
            scope = Self.origin(of: url) ?? .origin(scheme: "", host: "", port: 0)
        } else {
            let path = url.hasPrefix("file:") ? String(url.dropFirst(5)) : url
            scope = .directory(OutputDestination.resolved(PathText.parent(of: path)))
        }
    }

    /// Whether something the input names was refused or failed to open.
    var failed: Bool { hasProblem.load(ordering: .acquiring) }

    func noteRead(_ time: Int64) {
        if time > reached.load(ordering: .relaxed) { reached.store(time, ordering: .relaxed) }
    }

    private func note(_ found: Problem) {
        problem.withLock { $0 = $0 ?? found }
        hasProblem.store(true, ordering: .releasing)
    }

    /// Installs the guard on `context` (before `avformat_open_input`). The guard must outlive it.
    func install(on context: UnsafeMutablePointer<AVFormatContext>) {
        next = context.pointee.io_open
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.io_open = { context, pb, url, flags, options in
            guard let context, let opaque = context.pointee.opaque, let url else { return AVErr.permission }
            let guarding = Unmanaged<InputGuard>.fromOpaque(opaque).takeUnretainedValue()
            return guarding.open(context, pb, String(cString: url), flags, options)
        }
    }

    private func open(
        _ context: UnsafeMutablePointer<AVFormatContext>,
        _ pb: UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?,
        _ url: String,
        _ flags: Int32,
        _ options: UnsafeMutablePointer<OpaquePointer?>?
    ) -> Int32 {
        let first = opens.withLock {
            $0 += 1
            return $0 == 1
        }
        guard flags & AVIO_FLAG_WRITE == 0, allows(url), let next else {
            note(.refused(url))
            return AVErr.permission
        }
        if case .origin = scope, let options {
            for (key, value) in InputFile.httpOptions { av_dict_set(options, key, value, 0) }
        }
        let result = next(context, pb, url, flags, options)
        if result < 0 && result != AVErr.exit && !first {
            note(.unopened(url, result))
        }
        return result
    }

    /// Whether `url` is inside the scope.
    func allows(_ url: String) -> Bool {
        switch scope {
        case .directory(let directory):
            // A plain path or `file:`; nothing else (no `crypto+file:`, `data:`, `http:`).
            let path: String
            if url.hasPrefix("file:") {
                path = String(url.dropFirst(5))
            } else if url.hasPrefix("/") {
                path = url
            } else {
                return false
            }
            guard path.hasPrefix("/") else { return false }
            let resolved = OutputDestination.resolved(path)
            return resolved.hasPrefix(directory == "/" ? "/" : directory + "/")
        case .origin:
            return !scope.isEmptyOrigin && Self.origin(of: url) == scope
        }
    }

    /// Notes that the reader of `context` (an input's `AVFormatContext`, from FFmpeg's log)
    /// went on without `what`.
    static func noteSkipped(_ what: String, by context: UnsafeMutableRawPointer) {
        guard let type = context.assumingMemoryBound(to: UnsafePointer<AVClass>?.self).pointee,
            strcmp(type.pointee.class_name, "AVFormatContext") == 0,
            let opaque = context.assumingMemoryBound(to: AVFormatContext.self).pointee.opaque
        else { return }
        let guarding = Unmanaged<InputGuard>.fromOpaque(opaque).takeUnretainedValue()
        let at = guarding.reached.load(ordering: .relaxed)
        guarding.skipped.withLock { $0 = $0 ?? (what, at) }
    }

    /// What the input named that was refused (`input_unsupported`), failed to open or was
    /// skipped with media after it (`input_unreadable`, retried later when the network
    /// failed), if anything.
    func failure(format: String?, duration: Int64? = nil) -> MediaError? {
        let what =
            switch format {
            case "hls"?: "an HLS playlist (hls)"
            case "dash"?: "a DASH manifest (dash)"
            default: "an input\(format.map { " (\($0))" } ?? "")"
            }
        func named(_ url: String) -> Substring {
            MediaLocation.displayed(url.hasPrefix("file:") ? String(url.dropFirst(5)) : url).prefix(120)
        }
        guard let found = problem.withLock({ $0 }) else {
            // HLS names every segment it reads: any skip is a hole. FFmpeg's DASH reader also
            // asks for one past the last: there a skip is a hole when media came after it, or
            // when it came before the end the manifest gives (a missing last segment).
            guard let (piece, at) = skipped.withLock({ $0 }).map({ ($0.what, $0.at) }),
                format != "dash" || reached.load(ordering: .relaxed) - at > 1_000_000
                    || duration.map({ at < $0 - 500_000 }) == true
            else { return nil }
            return MediaError(
                .inputUnreadable,
                "\(shown) is \(what) with \(piece) that cannot be read (missing or damaged): the media is incomplete"
            )
        }
        switch found {
        case .unopened(let url, let code):
            var failure = MediaError(
                .inputUnreadable,
                "\(shown) is \(what) that names '\(named(url))', which cannot be read (\(FFError.message(for: code))): the media is incomplete"
            )
            failure.transient = AVErr.transientNetwork.contains(code)
            return failure
        case .refused(let url) where url.hasPrefix("crypto"):
            return MediaError(
                .inputUnsupported,
                "\(shown) is \(what) whose segments are encrypted: jobctl does not decrypt HLS"
            )
        case .refused(let url):
            let rule =
                switch scope {
                case .directory:
                    "one read from a path may name only files in its own directory (no other protocol, no link leading out)"
                case .origin:
                    "one read from a URL may name only URLs on its own scheme, host and port"
                }
            return MediaError(
                .inputUnsupported,
                "\(shown) is \(what) that names '\(named(url))', which jobctl does not open: \(rule)"
            )
        }
    }

    /// Scheme, host and port of an `http(s)` URL (the port the scheme implies when there is none).
    static func origin(of url: String) -> Scope? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        return .origin(scheme: scheme, host: host, port: components.port ?? (scheme == "https" ? 443 : 80))
    }
}

extension InputGuard.Scope {
    fileprivate var isEmptyOrigin: Bool { self == .origin(scheme: "", host: "", port: 0) }
}
