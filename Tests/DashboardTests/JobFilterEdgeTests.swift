import Foundation
import Queue
import QueueTestKit
import Testing

@testable import Dashboard

/// Every numeric and time term of the filter language driven over its edges (issue 42: one GET
/// of `priority:>9223372036854775807` or `after:-infh` trapped and took `serve` down with every
/// tenant's requests). A term either parses into conditions that mean what it says, or is
/// refused with a reason; it never traps, and neither does evaluating what it parsed into.
@Suite("Dashboard filter language at its edges")
struct JobFilterEdgeTests {
    let now = Date(timeIntervalSince1970: 1_795_780_800)

    static let numbers = [
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
        "9223372036854775806", "-9223372036854775807", "0", "-0", "+5", "1", "-1",
        "99999999999999999999999", "inf", "-inf", "infinity", "nan", "-nan", "1e308", "-1e308", "1e-308",
        "0x1p1023", "1.5", "", " ",
    ]
    static let priorityOperators = ["", ">", ">=", "<", "<=", "=", "=>", ">>"]
    static let ages = ["m", "h", "d", ""]
    static let dates = [
        "2026-11-27", "9999-12-31T23:59:59Z", "0000-01-01", "0001-01-01T00:00", "1970-01-01T00:00:00+14:00",
        "+275760-09-13", "-271821-04-20", "2026-02-30",
    ]

    /// Jobs at the corners: the least and greatest priorities, and submissions at both ends of time.
    static func jobs(now: Date) -> [Job] {
        [Int.min, -1, 0, 1, 5, Int.max].map { priority in
            var job = Job.sample(createdAt: now)
            job.priority = priority
            return job
        } + [Date(timeIntervalSince1970: 0), Date.distantPast, Date.distantFuture].map { Job.sample(createdAt: $0) }
    }

    /// Parses `text`; when it parses, evaluates every condition on every corner job and builds its SQL.
    func drive(_ text: String) -> [JobCondition]? {
        guard let query = try? JobFilterQuery(text, now: now) else { return nil }
        for job in Self.jobs(now: now) {
            for condition in query.conditions { _ = condition.matches(job) }
        }
        _ = JobConditionSQL.clause(query.conditions, placeholder: { "$\($0 + 1)" })
        return query.conditions
    }

    @Test("priority: every bound with every operator, negated or not, means what it says or is refused")
    func priorityBounds() {
        for number in Self.numbers {
            for op in Self.priorityOperators {
                for negated in [false, true] {
                    let text = "\(negated ? "-" : "")priority:\(op)\(number)"
                    guard let conditions = drive(text) else { continue }
                    // What parsed is a bound of Int64 and an operator of the language.
                    guard let bound = Int64(number.trimmingCharacters(in: .whitespaces)) else {
                        Issue.record("\(text) parsed although \(number) is not an Int64")
                        continue
                    }
                    for job in Self.jobs(now: now) {
                        let priority = Int64(job.priority)
                        let expected: Bool? =
                            switch op {
                            case "": priority == bound
                            case ">": priority > bound
                            case ">=": priority >= bound
                            case "<": priority < bound
                            case "<=": priority <= bound
                            default: nil
                            }
                        guard let expected else {
                            Issue.record("\(text) parsed with an operator the language lacks")
                            continue
                        }
                        #expect(conditions[0].matches(job) == (expected != negated), "\(text), priority \(priority)")
                    }
                }
            }
        }
    }

    @Test("after: and before: with any age, date or number: clamped to the ends of time, never a trap")
    func timeBounds() {
        var terms: [String] = []
        for field in ["after", "before"] {
            for number in Self.numbers {
                for unit in Self.ages { terms.append("\(field):-\(number)\(unit)") }
                terms.append("\(field):\(number)")
            }
            for date in Self.dates { terms.append("\(field):\(date)") }
            terms += ["\(field):-9999999999999h", "\(field):-1e308d", "\(field):-infh", "\(field):--1h"]
        }
        for term in terms {
            for negated in [false, true] { _ = drive((negated ? "-" : "") + term) }
        }
        // Ages far past every job: everything is after them, nothing before.
        let jobs = Self.jobs(now: now)
        for age in ["-1e308d", "-9999999999999h", "-0x1p1023m"] {
            let after = drive("after:\(age)")
            let before = drive("before:\(age)")
            #expect(after != nil && before != nil, "\(age) is an age")
            #expect(jobs.allSatisfy { job in after?.allSatisfy { $0.matches(job) } == true }, "after:\(age)")
            #expect(jobs.allSatisfy { job in before?.allSatisfy { $0.matches(job) } == false }, "before:\(age)")
        }
        // An infinite or undefined age is not an age.
        for age in ["-infh", "-nanh", "-infinityd"] { #expect(drive("after:\(age)") == nil, "\(age)") }
    }

    @Test("random terms of every field: parsed or refused, never a trap")
    func randomTerms() {
        var random = SplitMix64(seed: 42)
        let pieces =
            Self.numbers + Self.dates + Self.priorityOperators + ["-", ",", ":", "\"", " OR ", "h", "d", "m", "e", "x"]
        for _ in 0..<3000 {
            let field = JobFilterQuery.Field.allCases.randomElement(using: &random)!.rawValue
            let value = (0..<Int.random(in: 1...4, using: &random)).map { _ in pieces.randomElement(using: &random)! }
                .joined()
            _ = drive((Bool.random(using: &random) ? "-" : "") + "\(field):\(value)")
        }
    }

    @Test("a query's size is bounded: terms, values and their length")
    func sizes() throws {
        let most = (1...JobFilterQuery.maximumTerms).map { "w\($0)" }.joined(separator: " ")
        #expect(throws: Never.self) { try JobFilterQuery(most, now: now) }
        #expect(throws: JobFilterQuery.ParseError.self) { try JobFilterQuery(most + " w0", now: now) }
        let values = (1...JobFilterQuery.maximumValues).map(String.init).joined(separator: ",")
        #expect(throws: Never.self) { try JobFilterQuery("output:\(values)", now: now) }
        #expect(throws: JobFilterQuery.ParseError.self) { try JobFilterQuery("output:\(values),0", now: now) }
        #expect(throws: JobFilterQuery.ParseError.self) { try JobFilterQuery("kind:a OR " + "kind:\(values)") }
        let long = String(repeating: "é", count: JobFilterQuery.maximumValueBytes / 2)
        #expect(throws: Never.self) { try JobFilterQuery(long, now: now) }
        #expect(throws: JobFilterQuery.ParseError.self) { try JobFilterQuery(long + "x", now: now) }
        // 1,000 values (a 503 "Expression tree is too large" before) is a reason, not a failure.
        let thousand = "output:" + (1...1000).map(String.init).joined(separator: ",")
        do {
            _ = try JobFilterQuery(thousand, now: now)
            Issue.record("1,000 values parsed")
        } catch { #expect(error.description.contains("at most 32 values")) }
    }
}
