import Foundation
import GRDB
import Queue

// The dashboard's text search through a trigram index (migration 0010, decision 143).
extension SQLiteJobStore {
    /// A search narrowed by the index reads at most this many candidates. A term with more (a
    /// fifth of a million-job table) is common enough that walking the jobs newest first finds
    /// a page sooner.
    static let searchCandidates = 200_000
    /// Jobs past the index's end are read one by one; with more than this many (a database
    /// whose index is still being built) a search walks the jobs instead.
    static let searchBacklog: Int64 = 20_000

    /// Indexes up to `limit` jobs past the index's end, in one transaction; how many. Starts
    /// over (empties the index) when the last job indexed is not where it was: VACUUM
    /// renumbered the rowids, or that job was deleted.
    public func indexSearchText(limit: Int) async throws -> Int {
        try await write { db in
            guard let state = try Row.fetchOne(db, sql: "SELECT indexed_rowid, indexed_id FROM job_search_state")
            else { return 0 }
            var indexed: Int64 = state["indexed_rowid"]
            if indexed > 0 {
                let there = try String.fetchOne(db, sql: "SELECT id FROM jobs WHERE rowid = ?", arguments: [indexed])
                if there == nil || there != state["indexed_id"] {
                    try db.execute(sql: "INSERT INTO job_search (job_search) VALUES ('delete-all')")
                    try db.execute(sql: "UPDATE job_search_state SET indexed_rowid = 0, indexed_id = NULL")
                    indexed = 0
                }
            }
            let batch = try Row.fetchAll(
                db,
                sql: "SELECT rowid, id FROM jobs WHERE rowid > ? ORDER BY rowid LIMIT ?",
                arguments: [indexed, limit]
            )
            guard let last = batch.last else { return 0 }
            let lastRowid: Int64 = last[0]
            try db.execute(
                sql: """
                    INSERT INTO job_search (rowid, input, output)
                    SELECT rowid, input, output FROM jobs WHERE rowid > ? AND rowid <= ?
                    """,
                arguments: [indexed, lastRowid]
            )
            try db.execute(
                sql: "UPDATE job_search_state SET indexed_rowid = ?, indexed_id = ?",
                arguments: [lastRowid, last[1] as String]
            )
            return batch.count
        }
    }

    /// The clause that narrows a listing to the index's candidates for its most selective
    /// text condition (and every job not indexed yet), with its argument; `nil` when none can
    /// be narrowed: a negated or short term (under three letters), or only common ones. The
    /// condition's own `LIKE` still decides, so a candidate is only a candidate.
    static func searchClause(_ conditions: [JobCondition], _ db: Database) -> (sql: String, match: String)? {
        // At most three terms are probed (each probe reads up to `searchCandidates` entries).
        let matches = Array(conditions.compactMap(searchMatch).prefix(3))
        // The index is used while it is in step: not too far behind, and its last job still at
        // its rowid (a VACUUM that renumbered rowids leaves it wrong until it is built again).
        guard !matches.isEmpty,
            let state = try? Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT coalesce((SELECT max(rowid) FROM jobs), 0) - indexed_rowid AS backlog,
                            indexed_rowid = 0 OR indexed_id IS (SELECT id FROM jobs WHERE rowid = indexed_rowid) AS inStep
                        FROM job_search_state
                        """
                )
            ),
            let backlog = state["backlog"] as Int64?, backlog <= searchBacklog, state["inStep"] as Bool? == true
        else { return nil }
        var best: (match: String, count: Int)?
        for match in matches {
            let count = try? Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT count(*) FROM (SELECT rowid FROM job_search WHERE job_search MATCH ? \
                        LIMIT \(searchCandidates))
                        """
                ),
                arguments: [match]
            )
            if let count, count < searchCandidates, count < best?.count ?? .max { best = (match, count) }
        }
        guard let best else { return nil }
        return (
            """
            rowid IN (SELECT rowid FROM job_search WHERE job_search MATCH ? \
            UNION ALL SELECT rowid FROM jobs WHERE rowid > (SELECT indexed_rowid FROM job_search_state))
            """,
            best.match
        )
    }

    /// The index query for a condition: every three-letter run of a term (the index keeps no
    /// positions, so a row with all of them is a candidate), terms OR'd; `nil` when the index
    /// cannot narrow it.
    static func searchMatch(_ condition: JobCondition) -> String? {
        guard !condition.negated, [.text, .input, .output].contains(condition.field),
            case .containsAny(let needles) = condition.test, !needles.isEmpty
        else { return nil }
        var alternatives: [String] = []
        for needle in needles {
            let scalars = Array(needle.unicodeScalars)
            guard scalars.count >= 3 else { return nil }
            var runs = Set<String>()
            for start in 0...(scalars.count - 3) {
                var run = String.UnicodeScalarView()
                run.append(contentsOf: scalars[start..<start + 3])
                runs.insert("\"" + String(run).replacingOccurrences(of: "\"", with: "\"\"") + "\"")
            }
            alternatives.append("(" + runs.sorted().joined(separator: " AND ") + ")")
        }
        return alternatives.joined(separator: " OR ")
    }
}
