import Foundation
import Synchronization

/// The `jobctl` binary, built by `swift build --build-tests` next to the test bundle.
public enum Jobctl {
    public static let path: String = {
        if let override = ProcessInfo.processInfo.environment["JOBCTL_BINARY"] { return override }
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "jobctl"
        ).path
        if FileManager.default.isExecutableFile(atPath: beside) { return beside }
        // Running from the package root: .build/debug/jobctl.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/jobctl").path
    }()

    public static func run(
        _ arguments: [String],
        environment: [String: String]? = nil,
        in directory: String? = nil
    ) async throws -> ProcessResult {
        try await ProcessRunner.run(path, arguments, environment: environment, currentDirectory: directory)
    }

    public static func json(_ result: ProcessResult) throws -> Any {
        try JSONSerialization.jsonObject(with: result.stdout)
    }
}

/// The `jobctl-bench` binary, beside `jobctl` (its workers are that `jobctl`).
public enum JobctlBench {
    public static var path: String {
        URL(fileURLWithPath: Jobctl.path).deletingLastPathComponent().appendingPathComponent("jobctl-bench").path
    }

    public static func run(_ arguments: [String]) async throws -> ProcessResult {
        try await ProcessRunner.run(path, arguments, environment: ["JOBCTL_BINARY": Jobctl.path])
    }
}

/// A long-running `jobctl` process (a worker) that a test starts, signals and waits for.
/// Its stderr (the log) goes to a file the test can read.
public final class JobctlProcess: Sendable {
    public let logPath: String
    private let child: ChildProcess

    public init(_ arguments: [String], log logPath: String, environment: [String: String] = [:]) throws {
        self.logPath = logPath
        let log = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard log >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(log) }
        child = try ChildProcess(Jobctl.path, arguments, environment: environment, error: log)
    }

    public var pid: Int32 { child.pid }

    public func signal(_ number: Int32) { child.signal(number) }

    /// The exit status (128 + n for signal n) and when it was noticed, once exited.
    public var exited: (status: Int32, at: ContinuousClock.Instant)? { child.exit }

    /// Waits up to `timeout` for the process to exit; SIGKILLs it if it does not.
    @discardableResult
    public func waitForExit(timeout: Duration) async throws -> (status: Int32, at: ContinuousClock.Instant)? {
        let deadline = ContinuousClock.now + timeout
        while exited == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        if exited == nil { signal(SIGKILL) }
        return exited
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Whether the process is stopped (SIGSTOP: a failpoint it reached, `JOBCTL_FAILPOINTS`).
    public var isStopped: Bool { processIsStopped(pid) }

    deinit { child.signal(SIGKILL) }
}

/// Whether `pid` is stopped (state `T` in /proc).
public func processIsStopped(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let close = stat.lastIndex(of: ")")
    else { return false }
    return stat[stat.index(close, offsetBy: 2)] == "T"
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes.
public func eventually(within timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// Whether `condition` holds all through `window` (checked every 10 ms; `false` as soon as it
/// does not): for "nothing happens", a push that must wait or a watch that must not be
/// answered, where there is no event to wait for. Time is the behaviour there, and a slow
/// machine can only make such a check pass when it should not, never fail when it should pass.
public func holds(for window: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let end = ContinuousClock.now + window
    while ContinuousClock.now < end {
        guard try await condition() else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
