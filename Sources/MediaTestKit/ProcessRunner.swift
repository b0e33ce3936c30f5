import Foundation

/// What a finished process left behind.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: String
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}

public struct ProcessFailure: Error, CustomStringConvertible {
    public var command: String
    public var result: ProcessResult
    public var description: String { "\(command) exited \(result.status): \(result.stderr.suffix(2000))" }
}

/// Runs programs for tests without blocking the Swift concurrency pool: the child is reaped
/// and its pipes drained on threads of their own.
public enum ProcessRunner {
    /// Runs `executable` (a path, or a name looked up in PATH) and returns its status (128 + n
    /// when signal n ended it) and output.
    public static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        currentDirectory: String? = nil
    ) async throws -> ProcessResult {
        let output = try ChildPipe()
        let errors = try ChildPipe()
        let child: ChildProcess
        do {
            child = try ChildProcess(
                executable,
                arguments,
                environment: environment,
                currentDirectory: currentDirectory,
                output: output.write,
                error: errors.write
            )
        } catch {
            for descriptor in [output.read, output.write, errors.read, errors.write] { close(descriptor) }
            throw error
        }
        close(output.write)
        close(errors.write)
        async let stdout = output.readAll()
        async let stderr = errors.readAll()
        let (out, err) = await (stdout, stderr)
        let status = await child.wait()
        return ProcessResult(status: status, stdout: out, stderr: String(decoding: err, as: UTF8.self))
    }

    /// Like `run`, but throws unless the process exits 0.
    @discardableResult
    public static func check(_ executable: String, _ arguments: [String]) async throws -> ProcessResult {
        let result = try await run(executable, arguments)
        guard result.status == 0 else {
            throw ProcessFailure(command: ([executable] + arguments).joined(separator: " "), result: result)
        }
        return result
    }

    public static func resolve(_ executable: String) throws -> String {
        if executable.contains("/") { return executable }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(executable)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw ProcessFailure(
            command: executable,
            result: ProcessResult(status: 127, stdout: Data(), stderr: "\(executable) is not in PATH")
        )
    }
}

/// A fresh directory for one test's outputs, removed by `remove()` (kept when the environment
/// sets `KEEP_TEST_OUTPUT=1`).
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(_ label: String = "test") throws {
        let base = NSTemporaryDirectory() + "jobctl-tests"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        path = "\(base)/\(label)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { "\(path)/\(name)" }

    /// Every entry in the directory, hidden files included.
    public func contents() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted() ?? [] }

    public func remove() {
        guard ProcessInfo.processInfo.environment["KEEP_TEST_OUTPUT"] != "1" else { return }
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a temporary directory that is removed afterwards.
public func withTemporaryDirectory<T>(
    _ label: String = "test",
    _ body: (TemporaryDirectory) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory(label)
    defer { directory.remove() }
    return try await body(directory)
}
