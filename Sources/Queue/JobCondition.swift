import Foundation

/// One condition of a job listing beyond status and owner: the dashboard's filters (issue 30,
/// docs/dashboard.md). Every store turns the same conditions into the same rows: the SQL stores
/// through `JobConditionSQL`, the memory store through `matches(_:)`, which is also the
/// conformance suite's oracle.
public struct JobCondition: Sendable, Hashable {
    /// What a condition looks at.
    public enum Field: String, Sendable, Hashable, CaseIterable {
        case status, kind, preset, worker, id
        /// The input or the output (text anywhere in either).
        case text
        case input, output
        case priority
        /// The submission time, Unix milliseconds.
        case created
    }

    /// How the field is compared.
    public enum Test: Sendable, Hashable {
        /// Equal to one of these (status, kind, preset, worker, id, priority).
        case anyOf([String])
        /// Contains one of these, case-insensitively for ASCII letters (text, input, output).
        case containsAny([String])
        /// At least this number (priority, created).
        case atLeast(Int64)
        /// Less than this number (priority, created).
        case below(Int64)
    }

    public var field: Field
    public var test: Test
    /// The job must *not* pass the test. (A job whose field is unset, such as the worker of a
    /// queued job, never passes a test, so it always passes a negated one.)
    public var negated: Bool

    public init(_ field: Field, _ test: Test, negated: Bool = false) {
        self.field = field
        self.test = test
        self.negated = negated
    }

    /// Whether `job` meets the condition.
    public func matches(_ job: Job) -> Bool { passes(job) != negated }

    private func passes(_ job: Job) -> Bool {
        switch test {
        case .anyOf(let values):
            guard let value = text(of: job) else { return false }
            return values.contains(value)
        case .containsAny(let needles):
            let haystacks = field == .text ? [job.input, job.output] : text(of: job).map { [$0] } ?? []
            return needles.contains { needle in
                haystacks.contains { Self.asciiLowercased($0).contains(Self.asciiLowercased(needle)) }
            }
        case .atLeast(let bound):
            guard let value = number(of: job) else { return false }
            return value >= bound
        case .below(let bound):
            guard let value = number(of: job) else { return false }
            return value < bound
        }
    }

    private func text(of job: Job) -> String? {
        switch field {
        case .status: job.status.rawValue
        case .kind: job.kind.rawValue
        case .preset: job.preset
        case .worker: job.worker
        case .id: job.id.rawValue
        case .input: job.input
        case .output: job.output
        case .priority: String(job.priority)
        case .text, .created: nil
        }
    }

    private func number(of job: Job) -> Int64? {
        switch field {
        case .priority: Int64(job.priority)
        case .created: job.createdAt.milliseconds
        default: nil
        }
    }

    /// Lowercases A–Z only, as SQLite's `lower()` and the stores' comparisons do.
    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
    }
}

/// The SQL of a list of conditions, for both SQL stores: column names are the same, only the
/// placeholders differ (`?` in SQLite, `$n` in PostgreSQL).
public enum JobConditionSQL {
    /// A bound value.
    public enum Argument: Sendable, Hashable {
        case text(String)
        case integer(Int64)
    }

    /// `AND`-joined conditions (`TRUE` for none), and their arguments in order. `placeholder`
    /// gives the text for the argument at a 0-based position of the returned list.
    /// `lowercase` lowers a column's text, ASCII letters only (SQLite's `lower()`; PostgreSQL's
    /// under the "C" collation), as `JobCondition.matches` does.
    public static func clause(
        _ conditions: [JobCondition],
        placeholder: (Int) -> String,
        lowercase: (String) -> String = { "lower(\($0))" }
    ) -> (sql: String, arguments: [Argument]) {
        var arguments: [Argument] = []
        func bind(_ argument: Argument) -> String {
            arguments.append(argument)
            return placeholder(arguments.count - 1)
        }
        let parts = conditions.map { condition -> String in
            let test: String
            switch condition.test {
            case .anyOf(let values):
                let column = column(condition.field)
                let bound = values.map { value -> String in
                    if condition.field == .priority, let number = Int64(value) { return bind(.integer(number)) }
                    return bind(.text(value))
                }
                test = bound.isEmpty ? "FALSE" : "\(column) IN (\(bound.joined(separator: ", ")))"
            case .containsAny(let needles):
                let columns = condition.field == .text ? ["input", "output"] : [column(condition.field)]
                let alternatives = needles.flatMap { needle in
                    let pattern = "%" + escapeLike(JobCondition.asciiLowercased(needle)) + "%"
                    return columns.map { "\(lowercase($0)) LIKE \(bind(.text(pattern))) ESCAPE '\\'" }
                }
                test = alternatives.isEmpty ? "FALSE" : "(\(alternatives.joined(separator: " OR ")))"
            case .atLeast(let bound):
                test = "\(column(condition.field)) >= \(bind(.integer(bound)))"
            case .below(let bound):
                test = "\(column(condition.field)) < \(bind(.integer(bound)))"
            }
            // NULL (no worker yet) fails a test (a WHERE drops it) and passes its negation, as
            // `matches` says. The test itself stays bare so that an index on its column serves it.
            return condition.negated ? "NOT COALESCE(\(test), FALSE)" : test
        }
        return (parts.isEmpty ? "TRUE" : parts.joined(separator: " AND "), arguments)
    }

    private static func column(_ field: JobCondition.Field) -> String {
        switch field {
        case .status: "status"
        case .kind: "kind"
        case .preset: "preset"
        case .worker: "worker"
        case .id: "id"
        case .input, .text: "input"
        case .output: "output"
        case .priority: "priority"
        case .created: "created_at"
        }
    }

    /// `%`, `_` and `\` taken literally in a LIKE pattern with `ESCAPE '\'`.
    static func escapeLike(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }
}
