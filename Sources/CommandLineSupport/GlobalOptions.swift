import ArgumentParser
import Foundation
import JobctlCore
import Logging
import Media
import Observability

/// Options every command takes.
package struct GlobalOptions: ParsableArguments {
    package init() {}

    @Flag(
        name: .shortAndLong,
        help: "Log more: -v shows FFmpeg's warnings, -vv its verbose messages and our debug log."
    )
    package var verbose: Int

    @Option(
        help: ArgumentHelp(
            "How logs are written to stderr: text, or json (one object per line). Env: JOBCTL_LOG_FORMAT.",
            valueName: "format"
        )
    )
    package var logFormat: LogFormat?

    package enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    /// Sends logs to stderr and FFmpeg's log through them; quiet unless -v.
    /// - Parameter defaultLevel: without -v (a worker logs what it does at info).
    package func bootstrapLogging(defaultLevel: Logger.Level = .warning) -> Logger {
        let level: Logger.Level = verbose >= 2 ? .debug : verbose == 1 ? .info : defaultLevel
        let format =
            logFormat ?? ProcessInfo.processInfo.environment["JOBCTL_LOG_FORMAT"].flatMap(LogFormat.init(rawValue:))
            ?? .text
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return EscapingLogHandler(wrapped: handler)
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let logger = Logger(label: "jobctl")
        FFmpegLog.bootstrap(
            logger: Logger(label: "ffmpeg"),
            verbosity: verbose >= 2 ? .verbose : verbose == 1 ? .warnings : .quiet
        )
        return logger
    }
}

/// Where custom presets come from.
package struct PresetOptions: ParsableArguments {
    package init() {}

    @Option(
        name: .customLong("presets"),
        help: ArgumentHelp("A JSON file of custom presets (the fields of `presets --json`).", valueName: "file")
    )
    package var presetsFile: String?

    /// The built-in presets plus the custom file's (`--presets`, else `JOBCTL_PRESETS`).
    package func catalog() throws -> PresetCatalog { try PresetOptions.catalog(file: presetsFile) }

    package static func catalog(file: String?) throws -> PresetCatalog {
        let path = file ?? ProcessInfo.processInfo.environment["JOBCTL_PRESETS"].flatMap { $0.isEmpty ? nil : $0 }
        do {
            return try PresetCatalog(customFile: path)
        } catch {
            throw CommandFailure.usage(error.description)
        }
    }
}

extension ContainerFormat: ExpressibleByArgument {}
extension HDRMode: ExpressibleByArgument {}

/// Resource limits (docs/spec.md §7): flags, else `JOBCTL_MAX_*` in the environment, else the defaults.
package struct LimitOptions: ParsableArguments {
    package init() {}

    @Option(
        help: ArgumentHelp(
            "The largest decoded picture: WIDTHxHEIGHT or a number of pixels (default 8192x4320, 8K). Env: JOBCTL_MAX_PIXELS.",
            valueName: "pixels"
        )
    )
    package var maxPixels: PixelCount?

    @Option(
        help: ArgumentHelp(
            "The longest output, e.g. 90m (default 12h). Env: JOBCTL_MAX_DURATION.",
            valueName: "duration"
        )
    )
    package var maxDuration: DurationArgument?

    @Option(
        help: ArgumentHelp("The most streams an input may have (default 64). Env: JOBCTL_MAX_TRACKS.", valueName: "n")
    )
    package var maxTracks: Int?

    @Option(
        help: ArgumentHelp(
            "The largest output file: bytes, or with K, M, G, T (default 64G). Env: JOBCTL_MAX_OUTPUT_SIZE.",
            valueName: "size"
        )
    )
    package var maxOutputSize: ByteCount?

    package func validate() throws {
        if let maxTracks, maxTracks < 1 { throw ValidationError("--max-tracks is at least 1") }
        if let maxDuration, maxDuration.duration <= .zero {
            throw ValidationError("--max-duration must be more than 0")
        }
    }

    /// The limits in effect. A malformed environment variable is a usage error naming it.
    package func limits(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ResourceLimits {
        func fromEnvironment<T>(_ name: String, _ parse: (String) -> T?) throws -> T? {
            guard let text = environment[name], !text.isEmpty else { return nil }
            guard let value = parse(text) else {
                throw CommandFailure.usage("\(name)='\(text)' is not valid (see jobctl export --help)")
            }
            return value
        }
        var limits = ResourceLimits.default
        if let pixels = try maxPixels ?? fromEnvironment("JOBCTL_MAX_PIXELS", PixelCount.init(argument:)) {
            limits.maxPixels = pixels.value
        }
        if let duration = try maxDuration ?? fromEnvironment("JOBCTL_MAX_DURATION", DurationArgument.init(argument:)) {
            limits.maxDuration =
                duration.duration.components.seconds * 1_000_000 + duration.duration.components.attoseconds
                / 1_000_000_000_000
        }
        if let tracks = try maxTracks ?? fromEnvironment("JOBCTL_MAX_TRACKS", { Int($0).flatMap { $0 > 0 ? $0 : nil } })
        {
            limits.maxTracks = tracks
        }
        if let bytes = try maxOutputSize ?? fromEnvironment("JOBCTL_MAX_OUTPUT_SIZE", ByteCount.init(argument:)) {
            limits.maxOutputBytes = bytes.value
        }
        return limits
    }
}

/// `4096x4096` or `16777216`.
package struct PixelCount: ExpressibleByArgument, Sendable {
    package var value: Int

    package init?(argument: String) {
        let parts = argument.lowercased().split(separator: "x")
        let numbers = parts.compactMap { Int($0) }
        guard numbers.count == parts.count, (1...2).contains(numbers.count), numbers.allSatisfy({ $0 > 0 }) else {
            return nil
        }
        let (product, overflow) =
            numbers.count == 2 ? numbers[0].multipliedReportingOverflow(by: numbers[1]) : (numbers[0], false)
        guard !overflow else { return nil }
        value = product
    }
}

/// `1048576`, `500K`, `64M`, `2G`, `1T` (powers of 1024).
package struct ByteCount: ExpressibleByArgument, Sendable {
    package var value: Int64

    package init?(argument: String) {
        let text = argument.trimmingCharacters(in: .whitespaces).uppercased().replacingOccurrences(of: "IB", with: "")
            .replacingOccurrences(of: "B", with: "")
        let scales: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var number = Substring(text)
        var scale: Int64 = 1
        if let last = text.last, let unit = scales[last] {
            number = text.dropLast()
            scale = unit
        }
        guard let base = Int64(number), base > 0 else { return nil }
        let (product, overflow) = base.multipliedReportingOverflow(by: scale)
        guard !overflow else { return nil }
        value = product
    }
}

/// The text log with tenants' strings escaped (`TerminalText`): a job's input, output or error
/// message carrying an escape sequence or a newline must not rewrite the operator's terminal or
/// forge a log line. (The JSON log escapes them itself.)
package struct EscapingLogHandler: LogHandler {
    package var wrapped: StreamLogHandler

    package var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    package var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue.map(Self.escaped) }
    }

    package func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: TerminalText.escaped("\(event.message)"))
        event.metadata = event.metadata?.mapValues(Self.escaped)
        wrapped.log(event: event)
    }

    package static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(TerminalText.escaped(text))
        case .stringConvertible(let value): .string(TerminalText.escaped(value.description))
        case .array(let values): .array(values.map(escaped))
        case .dictionary(let values): .dictionary(values.mapValues(escaped))
        }
    }
}
