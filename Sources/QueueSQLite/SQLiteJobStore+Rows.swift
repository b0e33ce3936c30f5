import Foundation
import GRDB
import Queue

// Rows read by column name; jobs and deliveries are built by the shared `StoredRow`.
extension SQLiteJobStore {
    static func status(of id: JobID, _ db: Database) throws -> JobStatus {
        guard
            let raw = try String.fetchOne(
                db.cachedStatement(sql: "SELECT status FROM jobs WHERE id = ?"),
                arguments: [id.rawValue]
            )
        else {
            throw JobStoreError.noJob(id)
        }
        return try StoredValue.decode(raw, column: "status", row: "job \(id)")
    }

    static func job(_ id: JobID, _ db: Database) throws -> Job {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT \(StoredColumns.job) FROM jobs WHERE id = ?"),
                arguments: [id.rawValue]
            )
        else {
            throw JobStoreError.noJob(id)
        }
        return try job(row, db)
    }

    static func job(_ row: Row, _ db: Database) throws -> Job {
        let statement = try db.cachedStatement(
            sql:
                "SELECT idx, source_index, media_type, status, codec, read, written FROM job_tracks WHERE job_id = ? ORDER BY idx"
        )
        let id: String = row["id"]
        let tracks = try Row.fetchAll(statement, arguments: [id]).map { track in
            JobTrack(
                index: track["idx"],
                sourceIndex: track["source_index"],
                mediaType: track["media_type"],
                status: try StoredValue.decode(track["status"] as String, column: "track status", row: "job \(id)"),
                codec: track["codec"],
                read: track["read"],
                written: track["written"]
            )
        }
        return try Stored(row).job(tracks: tracks)
    }

    static func replaceTracks(_ tracks: [JobTrack], of id: JobID, _ db: Database) throws {
        try db.run(sql: "DELETE FROM job_tracks WHERE job_id = ?", arguments: [id.rawValue])
        for track in tracks {
            try db.run(
                sql:
                    "INSERT INTO job_tracks (job_id, idx, source_index, media_type, status, codec, read, written) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    id.rawValue, track.index, track.sourceIndex, track.mediaType, track.status.rawValue, track.codec,
                    track.read, track.written,
                ]
            )
        }
    }
}

/// A SQLite row as the shared row reader sees it: values by column name. Names are resolved to
/// positions once per result (`Columns`), not on every access: GRDB's own by-name lookup
/// compares names case-insensitively each time, which cost a claim of 10,000 jobs 0.5 s.
struct Stored: StoredRow {
    /// The positions of a result's columns, by name: one per statement's rows.
    final class Columns: Sendable {
        let positions: [String: Int]

        init(_ row: Row) {
            positions = Dictionary(
                row.columnNames.enumerated().map { ($1, $0) },
                uniquingKeysWith: { first, _ in first }
            )
        }
    }

    let row: Row
    let columns: Columns

    init(_ row: Row, columns: Columns? = nil) {
        self.row = row
        self.columns = columns ?? Columns(row)
    }

    func text(_ column: String) throws -> String? { row[try position(column)] }
    func integer(_ column: String) throws -> Int64? { row[try position(column)] }
    func real(_ column: String) throws -> Double? { row[try position(column)] }
    func boolean(_ column: String) throws -> Bool? { row[try position(column)] }

    private func position(_ column: String) throws -> Int {
        guard let position = columns.positions[column] else {
            throw JobStoreError(
                .databaseCorrupt,
                "the job database returned no column \(column) (its schema is not the one this jobctl expects)"
            )
        }
        return position
    }
}
