import Foundation
import Queue
import Testing

/// Rows as jobctl left them before a job's role had a column (issue 43): the role as keys among
/// the kind's options. Each store's migration test writes them, migrates, and checks them here.
public struct LegacyRoleRows: Sendable {
    public let ids: [JobID]

    /// Seven jobs submitted to `store`: a split parent, its segment, an `also` parent, its
    /// extra output, a ladder chunk, a plain job, and one whose options are not JSON.
    public static func submit(to store: some JobStore) async throws -> LegacyRoleRows {
        var ids: [JobID] = []
        for name in ["split", "segment", "also", "alsoChild", "chunk", "plain", "damaged"] {
            let request = JobRequest(input: "/in/\(name).mov", output: "/o/\(name)", preset: "low")
            ids.append(try await store.submit(request).job.id)
        }
        return LegacyRoleRows(ids: ids)
    }

    static let segment = #"{"part":"video","index":0,"frames":100,"start":0,"end":4000000}"#

    /// SQL that turns the submitted rows into legacy ones (`table`: `jobs` or `jobctl.jobs`),
    /// once the `role` column is dropped.
    public func sql(table: String) -> String {
        let settings = [
            #"{"name":"low","split":"auto"}"#, #"{"name":"low","segment":\#(Self.segment)}"#,
            #"{"name":"low","also":[{"kind":"thumbnails","output":"/o/t"}]}"#, #"{"times":[1]}"#,
            #"{"ladder":"auto","chunk":{"index":1,"offset":6000000,"firstSegment":2}}"#, #"{"name":"low"}"#, "not json",
        ]
        var sql = ""
        for (id, text) in zip(ids, settings) {
            sql += "UPDATE \(table) SET preset_settings = '\(text)' WHERE id = '\(id)'; "
        }
        sql += "UPDATE \(table) SET parent_id = '\(ids[0])', child_index = 0 WHERE id IN ('\(ids[1])', '\(ids[6])'); "
        sql += "UPDATE \(table) SET parent_id = '\(ids[2])', child_index = 1 WHERE id = '\(ids[3])'; "
        sql += "UPDATE \(table) SET parent_id = '\(ids[0])', child_index = 2 WHERE id = '\(ids[4])';"
        return sql
    }

    /// After the migration: every role moved into its column, the keys out of the options.
    /// (The damaged row is checked by the caller, which can read its raw columns.)
    public func expectMigrated(in store: some JobStore) async throws {
        func job(_ index: Int) async throws -> Job { try #require(try await store.job(ids[index])) }
        let low: JSONValue = .object(["name": .string("low")])
        #expect(try await job(0).role == .parent(.split(.string("auto"))))
        #expect(try await job(0).presetSettings == low)
        #expect(
            try await job(1).role
                == .child(part: try JSONDecoder().decode(JSONValue.self, from: Data(Self.segment.utf8)))
        )
        #expect(try await job(1).presetSettings == low)
        let outputs: JSONValue = .array([.object(["kind": .string("thumbnails"), "output": .string("/o/t")])])
        #expect(try await job(2).role == .parent(.outputs(outputs)))
        #expect(try await job(2).presetSettings == low)
        #expect(try await job(3).role == .child(part: nil))
        #expect(try await job(4).role.part?["offset"] == .number(6_000_000))
        #expect(try await job(4).presetSettings == .object(["ladder": .string("auto")]))
        #expect(try await job(5).role == .standalone)
    }
}
