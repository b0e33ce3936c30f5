import CFFmpeg
import Foundation
import Logging
import Synchronization

/// Routes FFmpeg's own log (`av_log`) into swift-log.
///
/// FFmpeg's callback is process-global and is called from codec threads, so the sink is behind a
/// lock. FFmpeg is quiet by default: its messages are forwarded only at or above
/// `forwardLevel`. Independently, the last error-level message on each thread is remembered so
/// an error can say *why* FFmpeg failed (`moov atom not found`), whatever the log level.
public enum FFmpegLog {
    /// How much of FFmpeg's log reaches the logger.
    public enum Verbosity: Sendable {
        /// Nothing (the default).
        case quiet
        /// Errors and warnings.
        case warnings
        /// Everything down to FFmpeg's verbose level.
        case verbose
    }

    private struct Sink: Sendable {
        var logger: Logger?
        var forwardLevel: Int32 = AV_LOG_QUIET
    }

    private static let sink = Mutex(Sink())
    private static let installed = Mutex(false)

    /// Installs the callback (once per process) and sets where FFmpeg's messages go.
    public static func bootstrap(logger: Logger?, verbosity: Verbosity) {
        let level: Int32 =
            switch verbosity {
            case .quiet: AV_LOG_QUIET
            case .warnings: AV_LOG_WARNING
            case .verbose: AV_LOG_VERBOSE
            }
        sink.withLock { $0 = Sink(logger: logger, forwardLevel: level) }
        install()
    }

    /// Installs the callback without forwarding anything (errors are still remembered).
    static func install() {
        installed.withLock { done in
            guard !done else { return }
            done = true
            av_log_set_callback { context, level, format, arguments in
                FFmpegLog.handle(context: context, level: level, format: format, arguments: arguments)
            }
        }
    }

    private static func handle(
        context: UnsafeMutableRawPointer?,
        level: Int32,
        format: UnsafePointer<CChar>?,
        arguments: CVaListPointer?
    ) {
        // Debug and trace messages are frequent: drop them before formatting.
        guard level <= AV_LOG_VERBOSE, let format, let arguments else { return }
        if level <= AV_LOG_WARNING, let context, let skipped = skippedMedia(format) {
            InputGuard.noteSkipped(skipped, by: context)
        }
        let forwardLevel = FFmpegLog.sink.withLock { $0.forwardLevel }
        let remember = level <= AV_LOG_ERROR
        guard remember || level <= forwardLevel else { return }

        var prefix: Int32 = 1
        let line = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { buffer -> String in
            _ = av_log_format_line2(context, level, format, arguments, buffer.baseAddress, 1024, &prefix)
            return String(cString: buffer.baseAddress!)
        }
        let message = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !message.isEmpty else { return }
        if remember {
            Thread.current.threadDictionary[lastErrorKey] = message
        }
        guard level <= forwardLevel, let logger = FFmpegLog.sink.withLock({ $0.logger }) else { return }
        logger.log(level: logLevel(level), "\(message)", metadata: ["ffmpeg.level": "\(level)"])
    }

    private static let lastErrorKey = "jobctl.ffmpeg.lastError"

    /// What the playlist readers only warn about when they go on without a piece of the media.
    private static let skippingWarnings: [(format: String, what: String)] = [
        ("Failed to open fragment of playlist", "a fragment"),
        ("Failed to open an initialization section", "an initialization section"),
        ("Failed to open segment", "a segment"),
    ]

    private static func skippedMedia(_ format: UnsafePointer<CChar>) -> String? {
        skippingWarnings.first { strstr(format, $0.format) != nil }?.what
    }

    /// The last error FFmpeg logged on this thread since the previous call, if any.
    static func takeLastError() -> String? {
        let dictionary = Thread.current.threadDictionary
        let message = dictionary[lastErrorKey] as? String
        dictionary.removeObject(forKey: lastErrorKey)
        return message.map(stripContext)
    }

    /// Puts back an error taken with `takeLastError` (a second try that did not help).
    static func restoreLastError(_ message: String?) {
        guard let message else { return }
        Thread.current.threadDictionary[lastErrorKey] = message
    }

    /// `[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55d…] moov atom not found` → `moov atom not found`.
    private static func stripContext(_ message: String) -> String {
        guard message.hasPrefix("["), let end = message.firstIndex(of: "]") else { return message }
        return message[message.index(after: end)...].trimmingCharacters(in: .whitespaces)
    }

    private static func logLevel(_ level: Int32) -> Logger.Level {
        switch level {
        case ...AV_LOG_FATAL: .critical
        case ...AV_LOG_ERROR: .error
        case ...AV_LOG_WARNING: .warning
        case ...AV_LOG_INFO: .info
        default: .debug
        }
    }
}
