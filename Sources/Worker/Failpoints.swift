import Foundation
import Logging
import Synchronization

/// Named places where a test can freeze a worker as a debugger or the kernel would: with
/// `JOBCTL_FAILPOINTS=before-upload,before-rename` in its environment, the worker stops itself
/// (SIGSTOP) the first time it reaches each, until a SIGCONT. That is how the tests reproduce
/// "a worker frozen just before its PUT, whose lease expires meanwhile" deterministically. A
/// process nobody sets this for never stops. The names: `before-upload`, `before-rename`,
/// `before-fan-out` (a graph's parent about to create its children), `before-join` (a graph's
/// join claimed, about to read its children), `before-join-commit` (a join about to show its
/// output), `before-publish` (an `s3://` upload whose lease was just confirmed, about to make
/// its object visible), `after-part` (a multipart upload with a part in the store),
/// `between-files` (a set's upload with a file sent and another to go). The in-process commands
/// (`export`, `thumbnails`, `storyboard`, `waveform`, `hls`) have one: `signal-handlers` (their
/// Ctrl-C, SIGTERM and SIGHUP handlers asked for and not yet in place).
public enum Failpoints {
    private static let enabled: Set<Substring> = Set(
        (ProcessInfo.processInfo.environment["JOBCTL_FAILPOINTS"] ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)[...]
        }
    )
    private static let reached = Mutex<Set<String>>([])

    public static func hit(_ name: String, logger: Logger) {
        guard enabled.contains(name[...]) else { return }
        let first = reached.withLock { $0.insert(name).inserted }
        guard first else { return }
        logger.warning("Failpoint reached: stopping until SIGCONT", metadata: ["failpoint": "\(name)"])
        raise(SIGSTOP)
    }
}
