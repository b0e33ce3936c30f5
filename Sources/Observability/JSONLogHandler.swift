import Foundation
import Logging
import Synchronization

/// A swift-log handler writing one JSON object per line to stderr, for log collectors
/// (`--log-format json`): `time` (ISO 8601, UTC, milliseconds), `level`, `logger`, `message`,
/// `source`, and every metadata key at the top level (`job.id`, `worker`, `error.code`, …).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    private static let output = Mutex<Void>(())

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var object: [String: Any] = [:]
        for (key, value) in merged { object[key] = Self.json(value) }
        object["time"] = Self.timestamp()
        object["level"] = event.level.rawValue
        object["logger"] = label
        object["message"] = "\(event.message)"
        object["source"] = event.source
        guard
            var line = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.sortedKeys, .withoutEscapingSlashes]
            )
        else { return }
        line.append(0x0A)
        Self.output.withLock { _ in
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                    if written <= 0 { break }
                    offset += written
                }
            }
        }
    }

    private static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let string): return string
        case .stringConvertible(let convertible): return convertible.description
        case .array(let array): return array.map(json)
        case .dictionary(let dictionary): return dictionary.mapValues(json)
        }
    }

    private static func timestamp() -> String {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        var parts = tm()
        var seconds = time.tv_sec
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            parts.tm_year + 1900,
            parts.tm_mon + 1,
            parts.tm_mday,
            parts.tm_hour,
            parts.tm_min,
            parts.tm_sec,
            time.tv_nsec / 1_000_000
        )
    }
}
