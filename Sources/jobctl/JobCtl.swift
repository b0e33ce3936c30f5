import ArgumentParser
import CommandLineSupport
import Foundation
import JobctlCore

@main
struct JobCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobctl",
        abstract: "Transcode media on Linux servers: AVFoundation-style exports over FFmpeg.",
        discussion: """
            Queue exports with `jobctl submit` and run them with `jobctl worker` (as many worker \
            processes as you like share one job database), or export a file right now with \
            `jobctl export`. Inspect inputs with `jobctl probe`; `jobctl presets` lists the presets \
            with the ffmpeg command equivalent to each.

            Exit codes: 0 success, 1 the operation failed (the error line names a code, such as \
            input_not_found), 64 usage error, 130 interrupted.
            """,
        version: JobCtl.version,
        subcommands: [
            SubmitCommand.self, ListCommand.self, ShowCommand.self, CancelCommand.self, RetryCommand.self,
            WaitCommand.self,
            WatchCommand.self, WorkerCommand.self, WorkersCommand.self, MigrateCommand.self, WebhooksCommand.self,
            ExportCommand.self, ThumbnailsCommand.self, StoryboardCommand.self, WaveformCommand.self, HLSCommand.self,
            ProbeCommand.self,
            PresetsCommand.self,
            SampleCommand.self,
            KeysCommand.self,
            ServeCommand.self,
        ]
    )

    static let version = "0.1.0"

    /// ArgumentParser's `main`, with every error on one line `error: CODE: message` (usage
    /// errors: `error: usage: …`, exit 64), and arguments that are not UTF-8 refused before
    /// parsing (Swift would replace their bytes with U+FFFD, naming a file that does not exist).
    static func main() async {
        fixMmapThreshold()
        if let problem = invalidArgument() {
            Terminal.printError("error: usage: \(problem)")
            Glibc.exit(ErrorCode.usage.exitCode)
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try await asyncParseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            // Help, --version, and our own exits (the error line is already printed).
            if code == .success || error is ExitCode { exit(withError: error) }
            let text = message(for: error).split(whereSeparator: \.isNewline).map {
                $0.trimmingCharacters(in: .whitespaces)
            }.filter { !$0.isEmpty }
            if code.rawValue == ErrorCode.usage.exitCode {
                let command = arguments.first { !$0.hasPrefix("-") }.flatMap { name in
                    configuration.subcommands.first { $0._commandName == name }?._commandName
                }
                let help = command.map { "jobctl \($0) --help" } ?? "jobctl --help"
                Terminal.printError("error: usage: \(text.joined(separator: "; ")) (see \(help))")
            } else {
                Terminal.printError("error: internal: \(text.joined(separator: "; "))")
            }
            Glibc.exit(code.rawValue)
        }
    }

    /// Keeps glibc's threshold for serving an allocation with its own mapping at 128 KiB. By
    /// default the first large block freed raises it (up to 32 MiB), after which pictures and
    /// packets come from the heap arenas, which fragment and do not shrink: a seven-rendition
    /// ladder held 12 MiB more at its peak (docs/benchmarks.md, "HLS ladder"). The environment's
    /// `MALLOC_MMAP_THRESHOLD_`, when set, wins.
    static func fixMmapThreshold() {
        // mallopt and M_MMAP_THRESHOLD (-3) are in <malloc.h>, which the Glibc module leaves out.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard getenv("MALLOC_MMAP_THRESHOLD_") == nil, let symbol = dlsym(nil, "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-3, 128 << 10)
    }

    /// Why an argument cannot be used, if one is not valid UTF-8.
    static func invalidArgument() -> String? {
        for index in 1..<Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index], String(validatingCString: pointer) == nil else {
                continue
            }
            let bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self),
                count: strlen(pointer)
            )
            let shown = bytes.map {
                (32..<127).contains($0) ? String(UnicodeScalar($0)) : String(format: "\\x%02x", $0)
            }.joined()
            return
                "argument \(index) ('\(shown)') is not valid UTF-8: jobctl takes file names and URLs as UTF-8 text; rename the file (e.g. with convmv)"
        }
        return nil
    }
}
