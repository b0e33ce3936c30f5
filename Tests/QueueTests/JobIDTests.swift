import Foundation
import Queue
import Testing

@Suite("JobID")
struct JobIDTests {
    static let hexDigits = Set("0123456789abcdef")

    @Test("a UUIDv7 in lowercase text: 8-4-4-4-12 hex digits, version 7, variant 10")
    func format() {
        for _ in 0..<200 {
            let id = JobID.make()
            let text = Array(id.rawValue)
            #expect(text.count == 36, "\(id)")
            for (index, character) in text.enumerated() {
                if [8, 13, 18, 23].contains(index) {
                    #expect(character == "-", "\(id): position \(index)")
                } else {
                    #expect(
                        Self.hexDigits.contains(character),
                        "\(id): position \(index) is \(character), not a lowercase hex digit"
                    )
                }
            }
            #expect(text[14] == "7", "\(id): version nibble")
            #expect("89ab".contains(text[19]), "\(id): variant bits 10")
            #expect(id.rawValue == id.rawValue.lowercased())
            #expect(id.description == id.rawValue)
            #expect(id.isWellFormed)
            let uuid = UUID(uuidString: id.rawValue)
            #expect(uuid?.uuidString.lowercased() == id.rawValue)
        }
    }

    @Test("the first 48 bits are the Unix milliseconds of its date")
    func timestamp() {
        let date = Date(timeIntervalSince1970: 1_767_225_600.123)  // 2026-01-01T00:00:00.123Z
        let id = JobID.make(at: date)
        let hex = id.rawValue.replacingOccurrences(of: "-", with: "")
        #expect(UInt64(hex.prefix(12), radix: 16) == 1_767_225_600_123)
        #expect(JobID.make(at: Date(timeIntervalSince1970: 0)).rawValue.hasPrefix("00000000-0000-7"))
    }

    /// Stores build dates from Unix milliseconds (`Date(timeIntervalSince1970: ms / 1000)`), and
    /// such a date is often a hair below its millisecond: the id must still carry that millisecond.
    @Test("a date made from milliseconds gives an id with those milliseconds")
    func timestampOfMillisecondDates() {
        let base: Int64 = 1_767_225_600_000
        var wrong: [String] = []
        for offset in Int64(0)..<1_000 {
            let milliseconds = base + offset
            let id = JobID.make(at: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
            let hex = id.rawValue.replacingOccurrences(of: "-", with: "")
            let embedded = Int64(hex.prefix(12), radix: 16) ?? -1
            if embedded != milliseconds { wrong.append("\(milliseconds) → \(embedded)") }
        }
        #expect(wrong.count == 0, "\(wrong.count) of 1000 dates got the wrong millisecond, e.g. \(wrong.prefix(5))")
    }

    @Test("ids made at later times sort later; ids made together differ")
    func sortable() {
        // Dates as the stores make them, from Unix milliseconds: 1 ms apart, then seconds, then days apart.
        let start: Int64 = 1_767_225_600_000
        let offsets =
            (0..<100).map { Int64($0) } + (100..<200).map { Int64($0) * 1_000 }
            + (200..<300).map { Int64($0) * 86_400_000 }
        let dates = offsets.map { Date(timeIntervalSince1970: Double(start + $0) / 1000) }
        let ids = dates.map { JobID.make(at: $0) }
        var outOfOrder: [String] = []
        for index in 1..<ids.count where !(ids[index - 1] < ids[index]) {
            outOfOrder.append(
                "\(ids[index - 1]) at \(dates[index - 1].timeIntervalSince1970) !< \(ids[index]) at \(dates[index].timeIntervalSince1970)"
            )
        }
        #expect(
            outOfOrder.count == 0,
            "\(outOfOrder.count) of 299 later ids do not sort later, e.g. \(outOfOrder.prefix(3))"
        )
        #expect(
            zip(ids, ids.dropFirst()).allSatisfy { ($0.rawValue < $1.rawValue) == ($0 < $1) },
            "the text sorts as JobID does (as a database sorts it)"
        )
        let first = Date(timeIntervalSince1970: Double(start) / 1000)
        let together = (0..<1_000).map { _ in JobID.make(at: first) }
        #expect(Set(together).count == 1_000, "74 random bits: no collision among ids of one millisecond")
        #expect(JobID.make(at: Date(timeIntervalSince1970: Double(start + 1) / 1000)) > together.max()!)
    }

    @Test(
        "isWellFormed",
        arguments: [
            ("0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e", true),
            ("0192A0B4-4C6E-7D3A-9B1E-2F3A4B5C6D7E", true),  // lowercased by init
            ("not-a-job-id", false),
            ("", false),
            ("0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7", false),
            ("0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e0", false),
            ("0192a0b44c6e7d3a9b1e2f3a4b5c6d7e", false),
            ("0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6dzz", false),
            ("../../etc/passwd", false),
        ]
    )
    func wellFormed(_ text: String, _ expected: Bool) {
        #expect(JobID(text).isWellFormed == expected, "\(text)")
    }

    @Test("lowercased on the way in; Codable as a plain string")
    func codable() throws {
        let id = JobID("0192A0B4-4C6E-7D3A-9B1E-2F3A4B5C6D7E")
        #expect(id.rawValue == "0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e")
        #expect(id == JobID("0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e"))
        let literal: JobID = "0192A0B4-4C6E-7D3A-9B1E-2F3A4B5C6D7E"
        #expect(literal == id)
        let data = try JSONEncoder().encode([id])
        #expect(String(decoding: data, as: UTF8.self) == #"["0192a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e"]"#)
        let decoded = try JSONDecoder().decode(
            [JobID].self,
            from: Data(#"["0192A0B4-4C6E-7D3A-9B1E-2F3A4B5C6D7E"]"#.utf8)
        )
        #expect(decoded == [id])
    }
}
