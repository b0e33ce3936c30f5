import CSpawn
import Foundation
import Synchronization

/// A child process started with `posix_spawn` (not Foundation's `Process`, whose `run()` on
/// Linux crashes intermittently in Swift 6.3.1: see `cspawn.h`). It starts with every signal
/// at its default disposition and unblocked, and with no descriptor but 0, 1 and 2; a thread
/// of its own reaps it.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    private let state = Mutex<
        (exit: (status: Int32, at: ContinuousClock.Instant)?, waiting: [CheckedContinuation<Int32, Never>])
    >((nil, []))

    /// Starts `executable` (a path, or a name looked up in PATH). `input`, `output` and `error`
    /// become its descriptors 0, 1 and 2 (-1: /dev/null); the caller keeps its own copies.
    public init(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        currentDirectory: String? = nil,
        input: Int32 = -1,
        output: Int32 = -1,
        error: Int32 = -1
    ) throws {
        let path = try ProcessRunner.resolve(executable)
        let variables = ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }.map {
            "\($0.key)=\($0.value)"
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = cspawn(path, argv, envp, currentDirectory, input, output, error, &pid)
        guard result == 0 else {
            throw ProcessFailure(
                command: path,
                result: ProcessResult(
                    status: 127,
                    stdout: Data(),
                    stderr: "posix_spawn: \(String(cString: strerror(result)))"
                )
            )
        }
        self.pid = pid
        let child = pid
        let reaper = Thread { [self] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            // The shell's convention: the exit code, or 128 + the signal that ended it.
            let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            let waiting = state.withLock { state -> [CheckedContinuation<Int32, Never>] in
                state.exit = (code, .now)
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume(returning: code) }
        }
        reaper.name = "test.reaper.\(child)"
        reaper.start()
    }

    /// The exit status (128 + n for a signal) and when it was noticed, once exited.
    public var exit: (status: Int32, at: ContinuousClock.Instant)? { state.withLock { $0.exit } }

    /// Waits for the process to end; returns its status.
    public func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Int32? in
                if let exit = state.exit { return exit.status }
                state.waiting.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    public func signal(_ number: Int32) {
        if exit == nil { kill(pid, number) }
    }

    /// Sends `number` and waits up to `timeout` for the process to end: its status and how long
    /// after the signal its reaper saw it end; `nil` if it is still running.
    public func stop(
        with number: Int32,
        within timeout: Duration = .seconds(30)
    ) async -> (status: Int32, took: Duration)? {
        let sent = ContinuousClock.now
        signal(number)
        guard await eventually(within: timeout, { exit != nil }), let exit else { return nil }
        return (exit.status, exit.at - sent)
    }
}

/// A pipe whose ends are closed on exec (the child gets a copy through `ChildProcess`).
public struct ChildPipe: Sendable {
    public let read: Int32
    public let write: Int32

    public init() throws {
        var ends: [Int32] = [0, 0]
        let result = cspawn_pipe(&ends)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        read = ends[0]
        write = ends[1]
    }

    /// Reads the read end to its end on a thread of its own (then closes it).
    public func readAll() async -> Data {
        await withCheckedContinuation { continuation in
            Thread { [read] in
                let handle = FileHandle(fileDescriptor: read, closeOnDealloc: true)
                continuation.resume(returning: handle.readDataToEndOfFile())
            }.start()
        }
    }
}
