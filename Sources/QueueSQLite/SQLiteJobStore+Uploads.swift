import Foundation
import GRDB
import Queue

// Uploads in flight at an object store, recorded under a lease (issue 28).
extension SQLiteJobStore {
    // MARK: Uploads

    public func recordUpload(_ lease: Lease, _ state: String?) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE jobs SET upload_state = ? WHERE id = ? AND lease_token = ? AND status = 'reading'",
                arguments: [state, lease.jobID.rawValue, lease.token]
            )
            return db.changesCount == 1
        }
    }

    public func recordedUpload(of id: JobID) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT upload_state FROM jobs WHERE id = ?", arguments: [id.rawValue])
        }
    }

    public func abandonedUploads(limit: Int) async throws -> [(id: JobID, state: String)] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, upload_state FROM jobs INDEXED BY jobs_uploads
                    WHERE upload_state IS NOT NULL AND status IN ('completed', 'failed', 'cancelled')
                    ORDER BY id LIMIT ?
                    """,
                arguments: [limit]
            ).map { (id: JobID($0["id"]), state: $0["upload_state"]) }
        }
    }

    public func clearAbandonedUpload(of id: JobID, state: String) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE jobs SET upload_state = NULL
                    WHERE id = ? AND upload_state = ? AND status IN ('completed', 'failed', 'cancelled')
                    """,
                arguments: [id.rawValue, state]
            )
            return db.changesCount == 1
        }
    }
}
