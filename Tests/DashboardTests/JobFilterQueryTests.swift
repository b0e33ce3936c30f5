import Foundation
import Queue
import Testing

@testable import Dashboard

/// The jobs page's filter language: what each term becomes, and what is refused with a reason.
@Suite("Dashboard filter language")
struct JobFilterQueryTests {
    let now = Date(timeIntervalSince1970: 1_795_780_800)  // 2026-11-27T12:00:00Z

    func conditions(_ text: String) throws -> [JobCondition] { try JobFilterQuery(text, now: now).conditions }

    @Test("fields, lists, aliases and negation")
    func fields() throws {
        #expect(try conditions("") == [])
        #expect(
            try conditions("status:queued,running") == [JobCondition(.status, .anyOf(["unknown", "reading"]))]
        )
        #expect(try conditions("status:Done") == [JobCondition(.status, .anyOf(["completed"]))])
        #expect(
            try conditions("kind:hls -preset:low worker:w1")
                == [
                    JobCondition(.kind, .anyOf(["hls"])),
                    JobCondition(.preset, .anyOf(["low"]), negated: true),
                    JobCondition(.worker, .anyOf(["w1"])),
                ]
        )
        #expect(try conditions("ID:0192ABCD") == [JobCondition(.id, .anyOf(["0192abcd"]))])
        #expect(
            try conditions("input:talk output:.m3u8") == [
                JobCondition(.input, .containsAny(["talk"])), JobCondition(.output, .containsAny([".m3u8"])),
            ]
        )
    }

    @Test("plain words and quoted words are text; a URL is text, not a filter")
    func text() throws {
        #expect(
            try conditions("talk -draft")
                == [
                    JobCondition(.text, .containsAny(["talk"])),
                    JobCondition(.text, .containsAny(["draft"]), negated: true),
                ]
        )
        #expect(try conditions("\"my talk.mov\"") == [JobCondition(.text, .containsAny(["my talk.mov"]))])
        #expect(try conditions("-\"my talk\"") == [JobCondition(.text, .containsAny(["my talk"]), negated: true)])
        #expect(try conditions("s3://media/a.mov") == [JobCondition(.text, .containsAny(["s3://media/a.mov"]))])
        #expect(try conditions("\"a:b\"") == [JobCondition(.text, .containsAny(["a:b"]))])
        #expect(try conditions("\"kind:hls\"") == [JobCondition(.kind, .anyOf(["hls"]))])
        // A lone dash is a word.
        #expect(try conditions("-") == [JobCondition(.text, .containsAny(["-"]))])
        #expect(try JobFilterQuery("  kind:hls    talk ").text == "kind:hls talk")
    }

    @Test("OR joins terms of one field")
    func or() throws {
        #expect(try conditions("kind:hls OR kind:export") == [JobCondition(.kind, .anyOf(["hls", "export"]))])
        #expect(
            try conditions("talk OR keynote OR demo") == [
                JobCondition(.text, .containsAny(["talk", "keynote", "demo"]))
            ]
        )
        #expect(try JobFilterQuery("kind:hls OR kind:export").text == "kind:hls OR kind:export")
        for bad in ["OR", "kind:hls OR", "OR kind:hls", "kind:hls OR preset:low", "kind:hls OR -kind:x", "a OR OR b"] {
            #expect(throws: JobFilterQuery.ParseError.self, "\(bad)") { try conditions(bad) }
        }
    }

    @Test("priority: numbers and one bound")
    func priority() throws {
        #expect(try conditions("priority:5,10") == [JobCondition(.priority, .anyOf(["5", "10"]))])
        #expect(try conditions("priority:-3") == [JobCondition(.priority, .anyOf(["-3"]))])
        #expect(try conditions("priority:>=5") == [JobCondition(.priority, .atLeast(5))])
        #expect(try conditions("priority:>5") == [JobCondition(.priority, .atLeast(6))])
        #expect(try conditions("priority:<=5") == [JobCondition(.priority, .below(6))])
        #expect(try conditions("priority:<5") == [JobCondition(.priority, .below(5))])
        for bad in ["priority:high", "priority:>x", "priority:>=", "priority:5,x"] {
            #expect(throws: JobFilterQuery.ParseError.self, "\(bad)") { try conditions(bad) }
        }
    }

    @Test("after: and before: take dates, times and ages")
    func times() throws {
        let day = Int64(1_795_737_600_000)  // 2026-11-27T00:00:00Z
        #expect(try conditions("after:2026-11-27") == [JobCondition(.created, .atLeast(day))])
        #expect(try conditions("before:2026-11-27T10:00") == [JobCondition(.created, .below(day + 36_000_000))])
        #expect(
            try conditions("after:2026-11-27T10:00:30+01:00") == [JobCondition(.created, .atLeast(day + 32_430_000))]
        )
        let nowMilliseconds = Int64(now.timeIntervalSince1970 * 1000)
        #expect(try conditions("after:-2h") == [JobCondition(.created, .atLeast(nowMilliseconds - 7_200_000))])
        #expect(
            try conditions("-after:-30m") == [
                JobCondition(.created, .atLeast(nowMilliseconds - 1_800_000), negated: true)
            ]
        )
        #expect(try conditions("before:-1d") == [JobCondition(.created, .below(nowMilliseconds - 86_400_000))])
        for bad in ["after:yesterday", "after:-2w", "after:2026-13-01", "after:a,b", "before:-x"] {
            #expect(throws: JobFilterQuery.ParseError.self, "\(bad)") { try conditions(bad) }
        }
    }

    @Test("a refusal says what the language has")
    func refusals() throws {
        func message(_ text: String) -> String {
            do {
                _ = try JobFilterQuery(text, now: now)
                return ""
            } catch { return error.description }
        }
        #expect(message("colour:red").contains("no filter 'colour:'; the filters are status, kind"))
        #expect(message("status:lost").contains("the statuses are queued, running"))
        #expect(message("kind:").contains("kind: needs a value"))
        #expect(message("\"open").contains("a quote is not closed"))
    }

    @Test("the default view is the jobs that have not ended")
    func defaultView() throws {
        let conditions = try conditions(JobFilterQuery.notEnded)
        #expect(conditions == [JobCondition(.status, .anyOf(["unknown", "reading"]))])
    }
}
