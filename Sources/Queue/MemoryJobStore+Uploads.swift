import Foundation

// Uploads in flight at an object store, recorded under a lease (issue 28).
extension MemoryJobStore {
    public func recordUpload(_ lease: Lease, _ state: String?) async throws -> Bool {
        write { tables in
            guard var record = tables.jobs[lease.jobID], record.holds(lease) else { return false }
            record.uploadState = state
            tables.jobs[lease.jobID] = record
            return true
        }
    }

    public func recordedUpload(of id: JobID) async throws -> String? {
        read { tables in tables.jobs[id]?.uploadState }
    }

    public func abandonedUploads(limit: Int) async throws -> [(id: JobID, state: String)] {
        read { tables in
            tables.jobs.values
                .filter { $0.job.status.isTerminal && $0.uploadState != nil }
                .sorted { $0.job.id.rawValue < $1.job.id.rawValue }
                .prefix(limit)
                .map { (id: $0.job.id, state: $0.uploadState!) }
        }
    }

    public func clearAbandonedUpload(of id: JobID, state: String) async throws -> Bool {
        write { tables in
            guard var record = tables.jobs[id], record.job.status.isTerminal, record.uploadState == state else {
                return false
            }
            record.uploadState = nil
            tables.jobs[id] = record
            return true
        }
    }
}
