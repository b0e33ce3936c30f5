import Foundation

/// A time range of an export, relative to the asset's start (docs/spec.md §2), in microseconds.
///
/// `AVAssetExportSession.timeRange`: `start` and an optional `duration` (`nil`: to the end).
/// Parsed from `START+DURATION`, `START-END` or `START`; intersected with the asset's duration
/// at run time.
public struct TimeRange: Sendable, Hashable, CustomStringConvertible {
    /// Microseconds from the asset's start.
    public var start: Int64
    /// Microseconds, or `nil` for "to the end of the asset".
    public var duration: Int64?

    public init(start: Int64, duration: Int64?) {
        precondition(start >= 0 && (duration ?? 1) > 0, "invalid time range")
        self.start = start
        self.duration = duration
    }

    /// The range from `start` for `duration` seconds as a job row or an API request stores
    /// them, or `nil` when they make no range: negative, not finite, beyond 10⁹ s, or a
    /// duration under a microsecond (`init` traps on those; a stored row must never reach it).
    public init?(seconds start: Double, duration: Double?) {
        func microseconds(_ seconds: Double) -> Int64? {
            guard seconds.isFinite, seconds >= 0, seconds <= 1e9 else { return nil }
            return Int64((seconds * 1_000_000).rounded())
        }
        guard let start = microseconds(start) else { return nil }
        if let duration {
            guard let microseconds = microseconds(duration), microseconds > 0 else { return nil }
            self.init(start: start, duration: microseconds)
        } else {
            self.init(start: start, duration: nil)
        }
    }

    /// The whole asset.
    public static let all = TimeRange(start: 0, duration: nil)

    /// The longest time an option may name, in µs (10^9 s, 31 years): far past any limit a
    /// worker enforces, and small enough that sums of such times never overflow.
    public static let longest: Int64 = 1_000_000_000 * 1_000_000

    public var end: Int64? { duration.map { start + $0 } }

    public var description: String {
        let startText = TimeRange.format(start)
        guard let duration else { return "\(startText)-end" }
        return "\(startText)+\(TimeRange.format(duration))"
    }

    /// At least milliseconds, so a comparison shows its precision (`10.000s`, `10.0081s`).
    public static func formatPrecisely(_ microseconds: Int64) -> String {
        let sign = microseconds < 0 ? "-" : ""
        let magnitude = microseconds.magnitude
        var digits = String(magnitude % 1_000_000)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.count > 3 && digits.hasSuffix("0") { digits.removeLast() }
        return "\(sign)\(magnitude / 1_000_000).\(digits)s"
    }

    static func format(_ microseconds: Int64) -> String {
        let seconds = microseconds / 1_000_000
        let fraction = microseconds % 1_000_000
        guard fraction != 0 else { return "\(seconds)s" }
        var digits = String(fraction)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return "\(seconds).\(digits)s"
    }
}

// MARK: - Parsing

/// Why a `--range` did not parse. A usage error (exit 64), never a job failure.
public struct TimeRangeParseError: Error, Sendable, CustomStringConvertible {
    /// What was being parsed: the message names its grammar, not another's.
    public enum Grammar: Sendable {
        /// `--range`, `range`.
        case range
        /// `--at`, `thumbnails.at`: a list of times.
        case times
        /// `--every`, `--tolerance`: one duration.
        case duration
    }

    public var text: String
    public var reason: String
    public var grammar: Grammar = .range

    public init(text: String, reason: String, grammar: Grammar = .range) {
        self.text = text
        self.reason = reason
        self.grammar = grammar
    }

    /// The same error, read as `grammar`.
    public func reading(_ grammar: Grammar) -> TimeRangeParseError {
        TimeRangeParseError(text: text, reason: reason, grammar: grammar)
    }

    public var description: String {
        switch grammar {
        case .range:
            "invalid range '\(text)': \(reason) (expected START+DURATION, START-END or START, e.g. 1s+3s, 1:00-1:30.5, 90)"
        case .times:
            "invalid times '\(text)': \(reason) (expected times separated by commas, each seconds, ms, a clock, a percentage or end, e.g. 1s,1:30,50%,end)"
        case .duration:
            "invalid duration '\(text)': \(reason) (expected seconds, ms or a clock, e.g. 10s, 1500ms, 1:30)"
        }
    }
}

extension TimeRange {
    /// Parses `1s+3s`, `1.5-4`, `1500ms+2s`, `1:02.5`, `00:01:02.500-00:01:10`.
    public init(parsing text: String) throws(TimeRangeParseError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        func fail(_ reason: String) -> TimeRangeParseError { TimeRangeParseError(text: text, reason: reason) }
        guard !trimmed.isEmpty else { throw fail("it is empty") }
        guard !trimmed.hasPrefix("-") else { throw fail("times cannot be negative") }

        if let plus = trimmed.firstIndex(of: "+") {
            let start = try TimeRange.parseTime(trimmed[..<plus], in: text)
            let duration = try TimeRange.parseTime(trimmed[trimmed.index(after: plus)...], in: text)
            guard duration > 0 else { throw fail("the duration must be greater than zero") }
            self.init(start: start, duration: duration)
        } else if let dash = trimmed.firstIndex(of: "-") {
            let start = try TimeRange.parseTime(trimmed[..<dash], in: text)
            let end = try TimeRange.parseTime(trimmed[trimmed.index(after: dash)...], in: text)
            guard end > start else { throw fail("the end must be after the start") }
            self.init(start: start, duration: end - start)
        } else {
            self.init(start: try TimeRange.parseTime(trimmed[...], in: text), duration: nil)
        }
    }

    /// Parses one time: `90`, `1.5`, `1.5s`, `1500ms`, `1:02.5`, `00:01:02.500`. Exact to the µs.
    public static func parseTime(_ text: Substring, in whole: String) throws(TimeRangeParseError) -> Int64 {
        func fail(_ reason: String) -> TimeRangeParseError { TimeRangeParseError(text: whole, reason: reason) }
        let time = text.trimmingCharacters(in: .whitespaces)
        guard !time.isEmpty else { throw fail("a time is missing") }
        if time.hasPrefix("-") { throw fail("times cannot be negative") }

        if time.contains(":") {
            let parts = time.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2 || parts.count == 3 else {
                throw fail("'\(time)' is not a clock time (M:SS or H:MM:SS)")
            }
            guard let seconds = decimal(parts[parts.count - 1], scale: 1_000_000), seconds < 60_000_000 else {
                throw fail("'\(time)' has invalid seconds (0 to 59.999999)")
            }
            // At most 9 digits of minutes: in microseconds the sum stays far from overflowing
            // (a 14-digit M:SS once trapped the server that parsed it).
            guard let minutes = Int64(parts[parts.count - 2]), minutes >= 0, parts.count == 2 || minutes < 60,
                parts[parts.count - 2].count <= 9, parts[parts.count - 2].allSatisfy({ $0.isASCII && $0.isNumber })
            else { throw fail("'\(time)' has invalid minutes") }
            var hours: Int64 = 0
            if parts.count == 3 {
                guard let parsed = Int64(parts[0]), parsed >= 0, parts[0].allSatisfy(\.isNumber), parsed < 1_000_000
                else {
                    throw fail("'\(time)' has invalid hours")
                }
                hours = parsed
            }
            return (hours * 3600 + minutes * 60) * 1_000_000 + seconds
        }
        if time.hasSuffix("ms") {
            guard let value = decimal(time.dropLast(2), scale: 1_000) else {
                throw fail("'\(time)' is not a number of milliseconds")
            }
            return value
        }
        let number = time.hasSuffix("s") ? time.dropLast() : Substring(time)
        guard let value = decimal(number, scale: 1_000_000) else {
            throw fail("'\(time)' is not a time (seconds, ms or a clock)")
        }
        return value
    }

    /// `digits[.digits]` times `scale`, rounded to an integer; `nil` if malformed or too large.
    static func decimal(_ text: Substring, scale: Int64) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        guard !(whole.isEmpty && fraction.isEmpty), whole.count <= 12,
            whole.allSatisfy({ $0.isASCII && $0.isNumber }), fraction.allSatisfy({ $0.isASCII && $0.isNumber }),
            parts.count == 1 || !fraction.isEmpty
        else { return nil }
        var value = (Int64(whole) ?? 0) * scale
        // Fraction digits times scale, rounded half up at the first digit below 1/scale.
        var unit = scale
        var remainder: Int64 = 0
        for digit in fraction {
            let d = Int64(digit.wholeNumberValue!)
            if unit >= 10 {
                unit /= 10
                value += d * unit
            } else {
                remainder = d
                break
            }
        }
        if remainder >= 5 { value += 1 }
        return value
    }
}

// MARK: - Resolution against an asset

/// A range resolved against an asset, in microseconds from the asset's start.
public struct ResolvedRange: Sendable, Hashable {
    public var start: Int64
    /// Where reading stops; `nil`: at the end of the input. A range that reaches the asset's
    /// end reads to the end of the input rather than stopping at the container's *estimate*
    /// of its duration (MPEG-TS and VBR MP3 durations are guesses).
    public var end: Int64?
    /// How long the export is expected to be (for progress): the range, or the asset's
    /// estimated remainder.
    public var expectedDuration: Int64?

    public init(start: Int64, end: Int64?, expectedDuration: Int64?) {
        self.start = start
        self.end = end
        self.expectedDuration = expectedDuration
    }
}

extension TimeRange {
    /// Intersects the range with an asset lasting `assetDuration` µs (`nil`: unknown), as
    /// AVFoundation does. An empty intersection is `range_out_of_bounds`.
    public func resolved(assetDuration: Int64?, assetName: String) throws(MediaError) -> ResolvedRange {
        guard let assetDuration, assetDuration > 0 else {
            return ResolvedRange(start: start, end: end, expectedDuration: duration)
        }
        guard start < assetDuration else {
            throw MediaError(
                .rangeOutOfBounds,
                "the range starts at \(TimeRange.formatPrecisely(start)) but \(assetName) lasts \(TimeRange.formatPrecisely(assetDuration))"
            )
        }
        if let end, end < assetDuration {
            return ResolvedRange(start: start, end: end, expectedDuration: end - start)
        }
        return ResolvedRange(start: start, end: nil, expectedDuration: assetDuration - start)
    }
}
