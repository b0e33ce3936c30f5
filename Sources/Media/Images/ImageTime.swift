/// A time to take an image at, as a person writes it: `1.5s`, `1:02`, `25%`, `end`.
public enum ImageTime: Sendable, Hashable, CustomStringConvertible {
    /// Microseconds from the asset's start.
    case at(Int64)
    /// A fraction (0…1) of the range (the whole asset without one).
    case fraction(Double)
    /// The last frame.
    case end

    public var description: String {
        switch self {
        case .at(let time): TimeRange.format(time)
        case .fraction(let fraction): "\(fraction * 100)%"
        case .end: "end"
        }
    }

    /// Parses one time: a time as `--range` takes it (`90`, `1.5s`, `1500ms`, `1:02.5`), a
    /// percentage (`25%`), or `end`.
    public init(parsing text: String) throws(TimeRangeParseError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased() == "end" {
            self = .end
        } else if trimmed.hasSuffix("%") {
            guard let percent = Double(trimmed.dropLast()), percent >= 0, percent <= 100 else {
                throw TimeRangeParseError(text: text, reason: "a percentage is between 0% and 100%")
            }
            self = .fraction(percent / 100)
        } else {
            self = .at(try TimeRange.parseTime(Substring(trimmed), in: text))
        }
    }

    /// Parses a comma-separated list: `1s,25%,50%,end`.
    public static func parseList(_ text: String) throws(TimeRangeParseError) -> [ImageTime] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard !text.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw TimeRangeParseError(text: text, reason: "no time given", grammar: .times)
        }
        var times: [ImageTime] = []
        do {
            for part in parts { times.append(try ImageTime(parsing: String(part))) }
        } catch {
            throw TimeRangeParseError(text: text, reason: error.reason, grammar: .times)
        }
        return times
    }

    /// Microseconds from the asset's start, for a range from `start` to `end` (µs from the
    /// asset's start; `end` `nil` when the duration is unknown: then fractions are of nothing
    /// and `end` is as far as the input goes).
    public func resolved(start: Int64, end: Int64?) -> Int64 {
        switch self {
        case .at(let time): return time
        case .fraction(let fraction):
            guard let end else { return start }
            return start + Int64((Double(end - start) * fraction).rounded())
        case .end: return end ?? Int64.max / 2
        }
    }

    /// `count` times evenly spaced over the range: the middle of each of `count` equal parts.
    public static func evenlySpaced(count: Int) -> [ImageTime] {
        (0..<max(0, count)).map { .fraction((Double($0) + 0.5) / Double(count)) }
    }

    /// A time every `interval` µs from the range's start, up to its end.
    public static func every(_ interval: Int64, start: Int64, end: Int64, limit: Int) -> [ImageTime] {
        guard interval > 0 else { return [] }
        return stride(from: start, to: end, by: Int(interval)).prefix(limit).map { .at($0) }
    }
}
