import Foundation
import PostgresNIO
import Queue

// Uploads in flight at an object store, recorded under a lease (issue 28).
extension PostgresJobStore {
    // MARK: Uploads

    public func recordUpload(_ lease: Lease, _ state: String?) async throws -> Bool {
        try await withConnection { connection in
            for try await _ in try await connection.query(
                """
                UPDATE jobctl.jobs SET upload_state = \(state)
                WHERE id = \(lease.jobID.rawValue) AND lease_token = \(lease.token) AND status = 'reading'
                RETURNING id
                """,
                logger: self.logger
            ).decode(String.self) { return true }
            return false
        }
    }

    public func recordedUpload(of id: JobID) async throws -> String? {
        try await withConnection { connection in
            for try await state in try await connection.query(
                "SELECT upload_state FROM jobctl.jobs WHERE id = \(id.rawValue)",
                logger: self.logger
            ).decode(String?.self) { return state }
            return nil
        }
    }

    public func abandonedUploads(limit: Int) async throws -> [(id: JobID, state: String)] {
        try await withConnection { connection in
            var found: [(id: JobID, state: String)] = []
            for try await (id, state) in try await connection.query(
                """
                SELECT id, upload_state FROM jobctl.jobs
                WHERE upload_state IS NOT NULL AND status IN ('completed', 'failed', 'cancelled')
                ORDER BY id LIMIT \(limit)
                """,
                logger: self.logger
            ).decode((String, String).self) { found.append((id: JobID(id), state: state)) }
            return found
        }
    }

    public func clearAbandonedUpload(of id: JobID, state: String) async throws -> Bool {
        try await withConnection { connection in
            for try await _ in try await connection.query(
                """
                UPDATE jobctl.jobs SET upload_state = NULL
                WHERE id = \(id.rawValue) AND upload_state = \(state) AND status IN ('completed', 'failed', 'cancelled')
                RETURNING id
                """,
                logger: self.logger
            ).decode(String.self) { return true }
            return false
        }
    }
}
