import Foundation
import Logging
import PostgresNIO
import Queue

// Rows read by column name; jobs and deliveries are built by the shared `StoredRow`.
extension PostgresJobStore {
    func status(of id: JobID, _ connection: PostgresConnection, lock: Bool = false) async throws -> JobStatus {
        let rows = try await connection.query(
            "SELECT status FROM jobctl.jobs WHERE id = \(id.rawValue) \(unescaped: lock ? "FOR UPDATE" : "")",
            logger: logger
        )
        for try await raw in rows.decode(String.self) {
            return try StoredValue.decode(raw, column: "status", row: "job \(id)")
        }
        throw JobStoreError.noJob(id)
    }

    func job(_ id: JobID, _ connection: PostgresConnection) async throws -> Job {
        guard
            let job = try await firstJob(
                "SELECT \(unescaped: StoredColumns.job) FROM jobctl.jobs WHERE id = \(id.rawValue)",
                connection
            )
        else {
            throw JobStoreError.noJob(id)
        }
        return job
    }

    /// The first job `query` returns (it selects `StoredColumns.job`), with its tracks.
    func firstJob(_ query: PostgresQuery, _ connection: PostgresConnection) async throws -> Job? {
        for try await row in try await connection.query(query, logger: logger) {
            return try await attachTracks([try Stored(row.makeRandomAccess()).job(tracks: [])], connection).first
        }
        return nil
    }

    func attachTracks(_ jobs: [Job], _ connection: PostgresConnection) async throws -> [Job] {
        guard !jobs.isEmpty else { return jobs }
        var tracks: [JobID: [JobTrack]] = [:]
        for try await (id, index, source, media, status, codec, read, written) in try await connection.query(
            """
            SELECT job_id, idx, source_index, media_type, status, codec, read, written FROM jobctl.job_tracks
            WHERE job_id = ANY(\(jobs.map(\.id.rawValue))) ORDER BY job_id, idx
            """,
            logger: logger
        ).decode((String, Int, Int, String, String, String?, Int64, Int64).self) {
            tracks[JobID(id), default: []].append(
                JobTrack(
                    index: index,
                    sourceIndex: source,
                    mediaType: media,
                    status: try StoredValue.decode(status, column: "track status", row: "job \(id)"),
                    codec: codec,
                    read: read,
                    written: written
                )
            )
        }
        return jobs.map { job in
            var job = job
            job.tracks = tracks[job.id] ?? []
            return job
        }
    }
}

/// A PostgreSQL row as the shared row reader sees it: cells by column name.
struct Stored: StoredRow {
    let row: PostgresRandomAccessRow
    init(_ row: PostgresRandomAccessRow) { self.row = row }

    func text(_ column: String) throws -> String? { try row[column].decode(String?.self) }
    func integer(_ column: String) throws -> Int64? { try row[column].decode(Int64?.self) }
    func real(_ column: String) throws -> Double? { try row[column].decode(Double?.self) }
    func boolean(_ column: String) throws -> Bool? { try row[column].decode(Bool?.self) }
}
