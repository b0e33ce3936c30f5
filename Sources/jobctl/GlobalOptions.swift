import ArgumentParser
import Foundation
import Logging
import Media
import Observability

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log more: -v shows FFmpeg's warnings, -vv its verbose messages and our debug log.")
    var verbose: Int

    @Option(help: ArgumentHelp("How logs are written to stderr: text, or json (one object per line). Env: JOBCTL_LOG_FORMAT.", valueName: "format"))
    var logFormat: LogFormat?

    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    /// Sends logs to stderr and FFmpeg's log through them; quiet unless -v.
    /// - Parameter defaultLevel: without -v (a worker logs what it does at info).
    func bootstrapLogging(defaultLevel: Logger.Level = .warning) -> Logger {
        let level: Logger.Level = verbose >= 2 ? .debug : verbose == 1 ? .info : defaultLevel
        let format = logFormat ?? ProcessInfo.processInfo.environment["JOBCTL_LOG_FORMAT"].flatMap(LogFormat.init(rawValue:)) ?? .text
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let logger = Logger(label: "jobctl")
        FFmpegLog.bootstrap(logger: Logger(label: "ffmpeg"), verbosity: verbose >= 2 ? .verbose : verbose == 1 ? .warnings : .quiet)
        return logger
    }
}

/// Where custom presets come from.
struct PresetOptions: ParsableArguments {
    @Option(name: .customLong("presets"), help: ArgumentHelp("A JSON file of custom presets (the fields of `presets --json`).", valueName: "file"))
    var presetsFile: String?

    /// The built-in presets plus the custom file's (`--presets`, else `JOBCTL_PRESETS`).
    func catalog() throws -> PresetCatalog { try PresetOptions.catalog(file: presetsFile) }

    static func catalog(file: String?) throws -> PresetCatalog {
        let path = file ?? ProcessInfo.processInfo.environment["JOBCTL_PRESETS"].flatMap { $0.isEmpty ? nil : $0 }
        do {
            return try PresetCatalog(customFile: path)
        } catch {
            throw CommandFailure.usage(error.description)
        }
    }
}

extension ContainerFormat: ExpressibleByArgument {}
