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

    public func leaseExpiry(of job: JobID) async throws -> Date? {
        read { tables in tables.jobs[job].flatMap { $0.job.status == .reading ? $0.leaseExpiresAt : nil } }
    }

    /// Searches read every job: nothing to index.
    public func indexSearchText(limit: Int) async throws -> Int { 0 }

    public func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int {
        let ahead = read { tables in
            tables.jobs.values.map(\.job).filter {
                $0.status == .unknown && $0.runAt.milliseconds <= now.milliseconds && $0.id != job.id
                    && Job.claimOrder($0, job) && (owner == nil || $0.owner == owner)
            }
            .count
        }
        return min(ahead, limit)
    }

    public func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String {
        dashboardTables.withLock { tables in
            if let secret = tables.secrets[name] { return secret }
            let secret = make()
            tables.secrets[name] = secret
            return secret
        }
    }

    public func attempts(of job: JobID) async throws -> [JobAttempt] {
        read { Array(($0.attempts[job] ?? []).prefix(100)) }
    }

    /// What the SQL stores' `job_attempt_ended` trigger records: each job that was running
    /// under a lease before a write and after it runs a later attempt, or has stopped without
    /// completing and without handing its attempt back (a release, a fan-out).
    static func noteEndedAttempts(_ running: [Job], _ tables: inout Tables, now: Date) {
        for before in running {
            guard let after = tables.jobs[before.id]?.job, after.attempt >= before.attempt,
                after.attempt > before.attempt || ![.reading, .completed].contains(after.status)
            else { continue }
            let takenOver = after.attempt != before.attempt
            tables.attempts[before.id, default: []].append(
                JobAttempt(
                    attempt: before.attempt,
                    worker: before.worker,
                    startedAt: before.startedAt,
                    endedAt: now,
                    outcome: takenOver ? JobAttempt.takenOver : after.status.rawValue,
                    errorCode: takenOver ? ErrorCode.leaseLost.rawValue : after.error?.code.rawValue,
                    errorMessage: takenOver
                        ? JobAttempt.takeoverMessage(from: before.worker, to: after.worker) : after.error?.message
                )
            )
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
