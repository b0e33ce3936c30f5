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

/// Runs programs for tests without blocking the Swift concurrency pool: the wait happens in
/// the termination handler, the pipes are drained on their own queues.
public enum ProcessRunner {
    /// Runs `executable` (a path, or a name looked up in PATH) and returns its status and output.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, currentDirectory: String? = nil
    ) async throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try resolve(executable))
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice

        let collected = Collected()
        let group = DispatchGroup()
        for (pipe, isError) in [(output, false), (errors, true)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.store(data, isError: isError)
                group.leave()
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { process in
                group.notify(queue: .global()) {
                    continuation.resume(returning: ProcessResult(
                        status: process.terminationStatus, stdout: collected.stdout, stderr: String(decoding: collected.stderr, as: UTF8.self)
                    ))
                }
            }
            do {
                try process.run()
            } catch {
                continuation.resume(throwing: error)
            }
        }
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
        throw ProcessFailure(command: executable, result: ProcessResult(status: 127, stdout: Data(), stderr: "\(executable) is not in PATH"))
    }

    private final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private(set) var stdout = Data()
        private(set) var stderr = Data()

        func store(_ data: Data, isError: Bool) {
            lock.lock()
            defer { lock.unlock() }
            if isError { stderr = data } else { stdout = data }
        }
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
public func withTemporaryDirectory<T>(_ label: String = "test", _ body: (TemporaryDirectory) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory(label)
    defer { directory.remove() }
    return try await body(directory)
}
