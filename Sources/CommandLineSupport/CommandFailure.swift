import ArgumentParser
import Foundation
import JobctlCore
import Media
import Queue

/// How a command ends when it cannot do its work: one line on stderr a person can act on
/// (`error: input_not_found: /data/in.mov does not exist`) and the exit status of its code
/// (`ErrorCode.exitCode`: 1, 64 for errors in the arguments, 130 when interrupted).
package enum CommandFailure: Error {
    /// The operation failed with a media error; an option at fault is named by its flag.
    case media(MediaError)
    /// A usage or configuration error (`error: usage: …`).
    case usage(String)
    /// An argument refused for a reason with its own code (`webhook_forbidden`, or
    /// `output_forbidden` for a loopback URL): a usage error, so it exits as `usage` does
    /// whatever its code's own exit (a job failing with `output_forbidden` exits 1).
    case refused(code: ErrorCode, String)
    /// The operation failed with `code`.
    case failed(code: ErrorCode, String)

    /// Prints the error and returns the exit to throw.
    package func report() -> ExitCode {
        switch self {
        case .media(let error):
            if let option = error.option {
                Terminal.printError("error: \(error.code): \(option.flag) \(option.requirement)")
            } else {
                Terminal.printError("error: \(error.description)")
            }
            return ExitCode(error.code.exitCode)
        case .usage(let message):
            Terminal.printError("error: usage: \(message)")
            return ExitCode(ErrorCode.usage.exitCode)
        case .refused(let code, let message):
            Terminal.printError("error: \(code): \(message)")
            return ExitCode(ErrorCode.usage.exitCode)
        case .failed(let code, let message):
            Terminal.printError("error: \(code): \(message)")
            return ExitCode(code.exitCode)
        }
    }
}

/// Runs a command body, turning our errors into their line and their code's exit status.
package func reportingFailures<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as MediaError {
        throw CommandFailure.media(error).report()
    } catch let error as CommandFailure {
        throw error.report()
    } catch let error as JobStoreError {
        Terminal.printError("error: \(error.description)")
        throw ExitCode(error.code.exitCode)
    }
}
