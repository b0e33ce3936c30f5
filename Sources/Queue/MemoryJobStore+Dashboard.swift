import Foundation
import JobctlCore
import Synchronization

extension MemoryJobStore: DashboardStore {
    public func createSession(_ session: DashboardSession) async throws {
        try dashboardTables.withLock { tables in
            tables.sessions = tables.sessions.filter { $0.value.expiresAt > session.createdAt }
            guard tables.sessions[session.idHash] == nil else {
                throw JobStoreError(.databaseUnavailable, "a dashboard session with this id exists already")
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

    /// Searches read every job: nothing to index.
    public func indexSearchText(limit: Int) async throws -> Int { 0 }

    public func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String {
        dashboardTables.withLock { tables in
            if let secret = tables.secrets[name] { return secret }
            let secret = make()
            tables.secrets[name] = secret
            return secret
        }
    }

    static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The first `limit` of `items`, newest first by `key` (creation time, then id), as listings show them.
    static func newestFirst<T>(_ items: [T], limit: Int, by key: (T) -> (Date, String)) -> [T] {
        Array(items.sorted { key($0) > key($1) }.prefix(max(limit, 0)))
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
    var secrets: [String: String] = [:]
}
