import Foundation
import Synchronization

extension MemoryJobStore: DashboardStore {
    public func createSession(_ session: DashboardSession) async throws {
        try dashboardTables.withLock { tables in
            tables.sessions = tables.sessions.filter { $0.value.expiresAt > session.createdAt }
            guard tables.sessions[session.idHash] == nil else {
                throw JobStoreError(.unavailable, "a dashboard session with this id exists already")
            }
            tables.sessions[session.idHash] = session
        }
    }

    public func session(idHash: String, at now: Date) async throws -> DashboardSession? {
        dashboardTables.withLock { tables in
            tables.sessions[idHash].flatMap { $0.expiresAt.milliseconds > now.milliseconds ? $0 : nil }
        }
    }

    public func deleteSession(idHash: String) async throws -> Bool {
        dashboardTables.withLock { $0.sessions.removeValue(forKey: idHash) != nil }
    }

    public func recordAudit(_ record: AuditRecord) async throws {
        dashboardTables.withLock { $0.audit.append(record) }
    }

    public func leaseExpiry(of job: JobID) async throws -> Date? {
        read { tables in tables.jobs[job].flatMap { $0.job.status == .reading ? $0.leaseExpiresAt : nil } }
    }

    /// Searches read every job: nothing to index.
    public func indexSearchText(limit: Int) async throws -> Int { 0 }

    public func queuedAhead(of job: Job, at now: Date, limit: Int) async throws -> Int {
        let ahead = read { tables in
            tables.jobs.values.map(\.job).filter {
                $0.status == .unknown && $0.runAt.milliseconds <= now.milliseconds && $0.id != job.id
                    && Job.claimOrder($0, job)
            }
            .count
        }
        return min(ahead, limit)
    }

    public func auditRecords(job: JobID?, limit: Int) async throws -> [AuditRecord] {
        dashboardTables.withLock { tables in
            Array(tables.audit.reversed().filter { job == nil || $0.jobID == job }.prefix(limit))
        }
    }
}

/// The memory store's dashboard tables.
struct DashboardTables {
    var sessions: [String: DashboardSession] = [:]
    var audit: [AuditRecord] = []
    var minutes: [Int64: MinuteSample] = [:]
}
