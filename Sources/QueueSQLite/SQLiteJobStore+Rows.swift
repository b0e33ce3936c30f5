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
            throw JobStoreError(.notFound, "no job \(id)")
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
            throw JobStoreError(.notFound, "no job \(id)")
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

/// A SQLite row as the shared row reader sees it: values by column name.
struct Stored: StoredRow {
    let row: Row
    init(_ row: Row) { self.row = row }

    func text(_ column: String) throws -> String? { row[column] }
    func integer(_ column: String) throws -> Int64? { row[column] }
    func real(_ column: String) throws -> Double? { row[column] }
    func boolean(_ column: String) throws -> Bool? { row[column] }
}
