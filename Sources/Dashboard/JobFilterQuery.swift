import Foundation
import Queue

/// The dashboard's filter language (after Oban Web's): what a person types in the jobs page's
/// search box, and what its URL carries as `?q=`.
///
///     status:queued,running kind:hls -preset:low priority:>=5 after:-2h talk.mov
///
/// - `field:value` with a field of `Field`; `field:a,b` or `field:a OR field:b`: either.
/// - A bare word (or `"quoted words"`) is text found in the input or the output, any case.
/// - A leading `-` negates a term: `-kind:hls`, `-draft`.
/// - `priority:` takes a number, `>=N`, `>N`, `<=N` or `<N`; `after:`/`before:` take a date
///   (`2026-11-27`), a time (`2026-11-27T10:00`, UTC unless it has a zone) or a time before
///   now (`-30m`, `-2h`, `-7d`).
/// - Statuses are named as the CLI shows them (`queued`, `running`, `completed`, `failed`,
///   `cancelled`) or as stored (`unknown`, `reading`).
public struct JobFilterQuery: Sendable, Hashable {
    public enum Field: String, Sendable, CaseIterable {
        case status, kind, preset, worker, priority, id, input, output, after, before
    }

    /// The conditions, every one of which a job meets.
    public var conditions: [JobCondition]

    /// The text as typed (normalised spacing), for the search box and the URL.
    public var text: String

    /// A term the language does not have.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// The most terms a query has (`OR` not counted).
    public static let maximumTerms = 16
    /// The most values all its terms have together (`kind:a,b` is two).
    public static let maximumValues = 32
    /// The longest value, in UTF-8 bytes.
    public static let maximumValueBytes = 256

    /// The query of `text`; `now` anchors relative times (`-2h`).
    public init(_ text: String, now: Date = Date()) throws(ParseError) {
        var conditions: [JobCondition] = []
        let terms = try Self.terms(text)
        try Self.checkSize(terms)
        var index = 0
        while index < terms.count {
            var term = terms[index]
            guard !term.isOr else { throw ParseError(description: "OR stands between two terms: \(text)") }
            // `a OR b`: both sides of one field (or both text) merge into one test.
            while index + 2 < terms.count, terms[index + 1].isOr {
                let next = terms[index + 2]
                guard next.field == term.field, next.negated == term.negated, !next.isOr else {
                    throw ParseError(
                        description:
                            "OR joins two terms of one field (kind:hls OR kind:export), not \(term.text) and \(next.text)"
                    )
                }
                term.values += next.values
                term.text += " OR " + next.text
                index += 2
            }
            if index + 1 < terms.count, terms[index + 1].isOr {
                throw ParseError(description: "OR stands between two terms: \(text)")
            }
            conditions.append(try Self.condition(term, now: now))
            index += 1
        }
        self.conditions = conditions
        self.text = terms.map(\.text).joined(separator: " ")
    }

    /// The statuses of jobs that have not ended: the page's default view.
    public static let notEnded = "status:queued,running"

    // MARK: Terms

    struct Term {
        var field: Field?
        var values: [String]
        var negated: Bool
        var text: String
        var isOr: Bool { field == nil && !negated && values == ["OR"] && text == "OR" }
    }

    /// Splits the text into terms: spaces separate them, except inside double quotes.
    static func terms(_ text: String) throws(ParseError) -> [Term] {
        var words: [(word: String, quoted: Bool)] = []
        var current = ""
        var quoted = false
        var inQuotes = false
        for character in text {
            if character == "\"" {
                inQuotes.toggle()
                quoted = true
            } else if character.isWhitespace && !inQuotes {
                if !current.isEmpty || quoted { words.append((current, quoted)) }
                current = ""
                quoted = false
            } else {
                current.append(character)
            }
        }
        guard !inQuotes else { throw ParseError(description: "a quote is not closed: \(text)") }
        if !current.isEmpty || quoted { words.append((current, quoted)) }
        return try words.map { (word, quoted) throws(ParseError) -> Term in
            var body = Substring(word)
            let negated = body.hasPrefix("-") && body.count > 1
            if negated { body = body.dropFirst() }
            let shown = quoted ? (negated ? "-" : "") + "\"\(body)\"" : word
            // `s3://…` and quoted text with a colon are text; `kind:…` and `"kind:a b"` are filters.
            if let colon = body.firstIndex(of: ":"),
                Field(rawValue: body[..<colon].lowercased()) != nil
                    || !(quoted || body[colon...].hasPrefix("://"))
            {
                let name = body[..<colon].lowercased()
                guard let field = Field(rawValue: name) else {
                    let known = Field.allCases.map(\.rawValue).joined(separator: ", ")
                    throw ParseError(description: "no filter '\(name):'; the filters are \(known), and plain words")
                }
                let values = body[body.index(after: colon)...].split(separator: ",").map(String.init)
                guard !values.isEmpty else { throw ParseError(description: "\(name): needs a value") }
                return Term(field: field, values: values, negated: negated, text: shown)
            }
            return Term(field: nil, values: [String(body)], negated: negated, text: shown)
        }
    }

    /// Refuses a query past the limits: every distinct shape of conditions is a statement the
    /// database prepares, and every value a part of it, so neither may grow without bound.
    static func checkSize(_ terms: [Term]) throws(ParseError) {
        let filters = terms.filter { !$0.isOr }
        guard filters.count <= maximumTerms else {
            throw ParseError(description: "a search has at most \(maximumTerms) terms; this one has \(filters.count)")
        }
        let values = filters.reduce(0) { $0 + $1.values.count }
        guard values <= maximumValues else {
            throw ParseError(
                description: "a search has at most \(maximumValues) values in all (a,b is two); this one has \(values)"
            )
        }
        if let long = filters.lazy.flatMap(\.values).first(where: { $0.utf8.count > maximumValueBytes }) {
            throw ParseError(
                description: "a value is at most \(maximumValueBytes) bytes long; one is \(long.utf8.count)"
            )
        }
    }

    // MARK: Conditions

    static func condition(_ term: Term, now: Date) throws(ParseError) -> JobCondition {
        let negated = term.negated
        guard let field = term.field else {
            return JobCondition(.text, .containsAny(term.values), negated: negated)
        }
        switch field {
        case .status:
            let statuses = try term.values.map { value throws(ParseError) -> String in
                guard let status = status(value) else {
                    throw ParseError(
                        description:
                            "no status '\(value)'; the statuses are queued, running, completed, failed, cancelled"
                    )
                }
                return status.rawValue
            }
            return JobCondition(.status, .anyOf(statuses), negated: negated)
        case .kind: return JobCondition(.kind, .anyOf(term.values), negated: negated)
        case .preset: return JobCondition(.preset, .anyOf(term.values), negated: negated)
        case .worker: return JobCondition(.worker, .anyOf(term.values), negated: negated)
        case .id: return JobCondition(.id, .anyOf(term.values.map { $0.lowercased() }), negated: negated)
        case .input: return JobCondition(.input, .containsAny(term.values), negated: negated)
        case .output: return JobCondition(.output, .containsAny(term.values), negated: negated)
        case .priority: return try priority(term)
        case .after, .before:
            guard term.values.count == 1, let date = date(term.values[0], now: now) else {
                throw ParseError(
                    description: "\(field.rawValue): takes one date (2026-11-27), time (2026-11-27T10:00) or age (-2h)"
                )
            }
            let milliseconds = Self.milliseconds(date)
            let test: JobCondition.Test = field == .after ? .atLeast(milliseconds) : .below(milliseconds)
            return JobCondition(.created, test, negated: negated)
        }
    }

    static func status(_ name: String) -> JobStatus? {
        switch name.lowercased() {
        case "queued", "unknown": .unknown
        case "running", "reading": .reading
        case "completed", "done": .completed
        case "failed": .failed
        case "cancelled", "canceled": .cancelled
        default: nil
        }
    }

    static func priority(_ term: Term) throws(ParseError) -> JobCondition {
        let refusal = ParseError(description: "priority: takes numbers (5 or 5,10) or one bound (>=5, >5, <=5, <5)")
        if term.values.count == 1, let value = term.values.first, let first = value.first, "<>".contains(first) {
            let inclusive = value.dropFirst().hasPrefix("=")
            guard let bound = Int64(value.dropFirst(inclusive ? 2 : 1)) else { throw refusal }
            // Checked: `>MAX` is a bound no number passes, `<=MAX` one every number passes.
            let test: JobCondition.Test
            switch (first, inclusive) {
            case (">", true): test = .atLeast(bound)
            case (">", false):
                let (next, overflow) = bound.addingReportingOverflow(1)
                test = overflow ? .anyOf([]) : .atLeast(next)
            case ("<", true):
                let (next, overflow) = bound.addingReportingOverflow(1)
                test = overflow ? .atLeast(.min) : .below(next)
            default: test = .below(bound)
            }
            return JobCondition(.priority, test, negated: term.negated)
        }
        guard term.values.allSatisfy({ Int64($0) != nil }) else { throw refusal }
        return JobCondition(.priority, .anyOf(term.values.map { String(Int64($0)!) }), negated: term.negated)
    }

    /// The latest and earliest times a `created` bound holds: ±2⁵³ ms (285,000 years either
    /// side of 1970), exact in a Double. An age older than that (`-1e308d`) is the earliest.
    static let millisecondRange: ClosedRange<Int64> = -(1 << 53)...(1 << 53)

    /// `date` in Unix milliseconds, clamped to `millisecondRange` (never a trap, whatever the age).
    static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return value < 0 ? millisecondRange.lowerBound : millisecondRange.upperBound }
        let clamped = min(max(value, Double(millisecondRange.lowerBound)), Double(millisecondRange.upperBound))
        return Int64(clamped)
    }

    /// `2026-11-27`, `2026-11-27T10:00[:00][Z|±hh:mm]` (UTC without a zone), or `-N[mhd]`.
    static func date(_ text: String, now: Date) -> Date? {
        if text.hasPrefix("-"), let unit = text.last, let amount = Double(text.dropFirst().dropLast()),
            amount.isFinite, amount >= 0
        {
            let seconds: Double? =
                switch unit {
                case "m": 60
                case "h": 3600
                case "d": 86400
                default: nil
                }
            return seconds.map { now.addingTimeInterval(-amount * $0) }
        }
        var candidate = text
        if candidate.count == 10 { candidate += "T00:00:00" }
        if candidate.count == 16 { candidate += ":00" }
        if candidate.count == 19 { candidate += "Z" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: candidate)
    }
}
