import Foundation

/// A helper server from scripts/ (a Python process): started on a free port, its requests
/// logged as JSON lines, stopped with SIGKILL.
public final class HelperServer: Sendable {
    public let port: Int
    public let log: String
    private let child: ChildProcess

    public init(
        script: String,
        _ directory: TemporaryDirectory,
        name: String,
        port: Int = 0,
        _ arguments: [String]
    ) async throws {
        log = directory.file("\(name).jsonl")
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("scripts/\(script)").path
        let output = try ChildPipe()
        child = try ChildProcess(
            "python3",
            [path, "--port", "\(port)", "--log", log] + arguments,
            output: output.write
        )
        close(output.write)
        let reader = FileHandle(fileDescriptor: output.read, closeOnDealloc: true)
        let line = try await onThread { String(decoding: reader.availableLine(), as: UTF8.self) }
        guard
            let port = Int(
                line.replacingOccurrences(of: "listening ", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
            )
        else {
            child.signal(SIGKILL)
            throw HelperServerError(script: script, line: line)
        }
        self.port = port
    }

    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Every request received, in order.
    public func records() -> [[String: Any]] {
        guard let text = try? String(contentsOfFile: log, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    public func stop() {
        child.signal(SIGKILL)
    }

    /// Stops the server and waits until its process has ended (its port is closed then).
    public func stopAndWait() async throws {
        child.signal(SIGKILL)
        guard await eventually(within: .seconds(30), { child.exit != nil }) else {
            throw HelperServerError(script: "a helper on port \(port)", line: "did not exit after SIGKILL")
        }
    }

    deinit { child.signal(SIGKILL) }
}

public struct HelperServerError: Error, CustomStringConvertible {
    public var script: String
    public var line: String

    public init(script: String, line: String) {
        self.script = script
        self.line = line
    }

    public var description: String { "\(script) did not start: '\(line)'" }
}

public func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

extension FileHandle {
    /// Reads until a newline (blocking).
    public func availableLine() -> Data {
        var line = Data()
        while true {
            let byte = readData(ofLength: 1)
            if byte.isEmpty || byte == Data("\n".utf8) { return line }
            line.append(byte)
        }
    }
}
