import ArgumentParser
import CommandLineSupport
import Dispatch
import Foundation
import Logging
import Media
import Synchronization
import Worker

/// Runs `body` with Ctrl-C, SIGTERM and SIGHUP (a closed terminal) calling `cancel` instead of
/// killing the process, so a cancelled operation removes its temporary files; and, on a
/// terminal (not with `--json`), a progress bar fed by `progress` (0…1).
func runInterruptibly<T>(
    showingProgress: Bool,
    total: Double?,
    progress: @escaping @Sendable () -> Double,
    cancel: @escaping @Sendable () -> Void,
    _ body: () async throws -> T
) async throws -> T {
    let signals = await cancellingOnSignals(cancel: cancel)
    defer { for signal in signals { signal.cancel() } }
    let bar = showingProgress && Terminal.stderrIsTTY ? ProgressBar(total: total) : nil
    let drawing = Task {
        while !Task.isCancelled, let bar {
            bar.draw(fraction: progress())
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
    defer {
        drawing.cancel()
        bar?.clear()
    }
    return try await body()
}

/// Ctrl-C, SIGTERM and SIGHUP call `cancel`; a second one, when the first has not ended the
/// operation (FFmpeg can spin in a loop that never asks whether to stop), removes `temporary`
/// files and exits at once with status 130. Cancel the returned sources when done.
///
/// Returns once the handlers are in place: libdispatch registers a signal source later, on a
/// thread of its own, and a command that went on meanwhile (made its temporary file) could
/// miss a signal. Until then a signal keeps its default effect and ends the process at once,
/// before anything was written; the signals are never set to be ignored first, since an
/// ignored signal is dropped, not held for the handler (docs/decisions.md #154).
func cancellingOnSignals(
    removing temporary: [String] = [],
    cancel: @escaping @Sendable () -> Void
) async -> [DispatchSourceSignal] {
    let received = Mutex(0)
    let sources = [SIGINT, SIGTERM, SIGHUP].map { number -> DispatchSourceSignal in
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler {
            let count = received.withLock { count in
                count += 1
                return count
            }
            guard count > 1 else { return cancel() }
            for path in temporary { unlink(path) }
            FileHandle.standardError.write(Data("error: cancelled: stopped without waiting (a second signal)\n".utf8))
            _exit(130)
        }
        return source
    }
    Failpoints.hit("signal-handlers", logger: Logger(label: "jobctl"))
    for source in sources {
        await withCheckedContinuation { (registered: CheckedContinuation<Void, Never>) in
            source.setRegistrationHandler { registered.resume() }
            source.resume()
        }
    }
    return sources
}

/// A maximum picture size: `320x180` (a box), `320x` (a width), `x180` (a height).
struct MaximumSize: ExpressibleByArgument, Sendable {
    var size: PictureSize
    /// As typed (what a job's request carries).
    var text: String

    init?(argument: String) {
        guard let size = PictureSize(maximum: argument) else { return nil }
        self.size = size
        text = argument
    }

    var defaultValueDescription: String { "\(size.width)x\(size.height)" }
}

extension ImageFormat: ExpressibleByArgument {
    public init?(argument: String) { self.init(name: argument) }
    public static var allValueStrings: [String] { ["jpg", "png", "webp"] }
}

/// A `--tolerance` or `--every` duration as `--range` writes times (`0.5s`, `500ms`, `1:00`).
struct MediaDuration: ExpressibleByArgument, Sendable {
    var microseconds: Int64
    /// As typed (what a job's request carries).
    var text: String

    init?(argument: String) {
        guard let value = try? TimeRange.parseTime(Substring(argument), in: argument) else { return nil }
        microseconds = value
        text = argument
    }

    init(microseconds: Int64, text: String) {
        self.microseconds = microseconds
        self.text = text
    }

    /// For `@Option(transform:)`: a refusal that names the duration grammar, not just the flag.
    static func parse(_ argument: String) throws -> MediaDuration {
        do {
            return MediaDuration(
                microseconds: try TimeRange.parseTime(Substring(argument), in: argument),
                text: argument
            )
        } catch {
            throw ValidationError(error.reading(.duration).description)
        }
    }
}

/// `--range`: checked while parsing (a bad range is a usage error, exit 64, naming what is
/// wrong) and turned into a `TimeRange` (all of the input when absent) when the command runs.
enum RangeArgument {
    static func validate(_ text: String?) throws {
        guard let text else { return }
        do { _ = try TimeRange(parsing: text) } catch { throw ValidationError(error.description) }
    }

    static func timeRange(_ text: String?) throws(TimeRangeParseError) -> TimeRange {
        guard let text else { return .all }
        return try TimeRange(parsing: text)
    }
}
