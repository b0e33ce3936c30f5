import Foundation

/// `30s`, `10m`, `1h`, `1500ms`, `90` (seconds): the durations of the CLI's flags and of the
/// HTTP API's `?wait=`, parsed once. `nil` for anything else (negative, not finite, no number,
/// or longer than `maximumDuration`: `?wait=4084410497952903323145ms` once crashed the server).
public func parseDuration(_ text: String) -> Duration? {
    let text = text.trimmingCharacters(in: .whitespaces).lowercased()
    let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
    let (number, scale) =
        units.first { text.hasSuffix($0.0) }.map { (String(text.dropLast($0.0.count)), $0.1) } ?? (text, 1)
    guard let value = Double(number), value >= 0, value.isFinite, value * scale <= maximumDurationSeconds else {
        return nil
    }
    return .milliseconds(Int64((value * scale * 1000).rounded()))
}

/// The longest duration `parseDuration` accepts: about 31 years, far past any timeout, far
/// below what overflows a `Duration` in milliseconds.
public let maximumDurationSeconds: Double = 1e9
