import Foundation
import Queue
import Synchronization

/// A real store with a count of the calls each method got, for tests that a route costs the
/// database what it should (`/healthz` one trivial statement, never a scan).
final class CountingStore: JobStore, JobStoreChangeNotifying, WebhookOutbox, APIKeyStore {
    let store: any JobDatabase
    private let counts = Mutex<[String: Int]>([:])

    init(_ store: any JobDatabase) { self.store = store }

    func count(_ method: String) -> Int { counts.withLock { $0[method, default: 0] } }
    private func called(_ method: String = #function) {
        let name = String(method.prefix { $0 != "(" })
        counts.withLock { $0[name, default: 0] += 1 }
    }

    func migrate() async throws { try await store.migrate() }
    func submit(_ request: JobRequest) async throws -> (job: Job, created: Bool) {
        called()
        return try await store.submit(request)
    }
    func claim(as worker: WorkerIdentity, limit: Int, lease: Duration) async throws -> [ClaimedJob] {
        called()
        return try await store.claim(as: worker, limit: limit, lease: lease)
    }
    func heartbeat(_ lease: Lease, progress: Double, tracks: [JobTrack], extendBy: Duration) async throws -> LeaseState
    {
        called()
        return try await store.heartbeat(lease, progress: progress, tracks: tracks, extendBy: extendBy)
    }
    func cancellationRequests(among leases: [Lease]) async throws -> Set<JobID> {
        called()
        return try await store.cancellationRequests(among: leases)
    }
    func complete(_ lease: Lease, result: JSONValue, tracks: [JobTrack]) async throws -> Bool {
        called()
        return try await store.complete(lease, result: result, tracks: tracks)
    }
    func fail(_ lease: Lease, error: JobError, retryDelay: Duration) async throws -> Bool {
        called()
        return try await store.fail(lease, error: error, retryDelay: retryDelay)
    }
    func confirmCancelled(_ lease: Lease) async throws -> Bool {
        called()
        return try await store.confirmCancelled(lease)
    }
    func release(_ lease: Lease) async throws -> Bool {
        called()
        return try await store.release(lease)
    }
    func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]? {
        called()
        return try await store.fanOut(lease, children: children)
    }
    func job(_ id: JobID) async throws -> Job? {
        called()
        return try await store.job(id)
    }
    func recordUpload(_ lease: Lease, _ state: String?) async throws -> Bool {
        called()
        return try await store.recordUpload(lease, state)
    }
    func recordedUpload(of id: JobID) async throws -> String? {
        called()
        return try await store.recordedUpload(of: id)
    }
    func abandonedUploads(limit: Int) async throws -> [(id: JobID, state: String)] {
        called()
        return try await store.abandonedUploads(limit: limit)
    }
    func clearAbandonedUpload(of id: JobID, state: String) async throws -> Bool {
        called()
        return try await store.clearAbandonedUpload(of: id, state: state)
    }
    func cancel(_ id: JobID) async throws -> CancelOutcome {
        called()
        return try await store.cancel(id)
    }
    func retry(_ id: JobID, force: Bool) async throws -> Job {
        called()
        return try await store.retry(id, force: force)
    }
    func jobs(_ query: JobQuery) async throws -> [Job] {
        called()
        // A page stream's look for the key's newest job.
        if query.limit == 1 && query.ids == nil { called("newestJob") }
        return try await store.jobs(query)
    }
    func statusCounts(owner: String?) async throws -> [JobStatus: Int] {
        called()
        return try await store.statusCounts(owner: owner)
    }
    func ping() async throws {
        called()
        try await store.ping()
    }
    func workerStarted(_ worker: WorkerIdentity) async throws { try await store.workerStarted(worker) }
    func workers() async throws -> [WorkerInfo] { try await store.workers() }
    func workerHeartbeat(_ worker: WorkerIdentity) async throws { try await store.workerHeartbeat(worker) }
    func workerStopped(_ worker: WorkerIdentity) async throws { try await store.workerStopped(worker) }
    func createAPIKey(_ key: APIKey, secretHash: String) async throws {
        try await store.createAPIKey(key, secretHash: secretHash)
    }
    func apiKey(id: String) async throws -> (key: APIKey, secretHash: String)? {
        called()
        return try await store.apiKey(id: id)
    }
    func apiKeys() async throws -> [APIKey] { try await store.apiKeys() }
    func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        try await store.revokeAPIKey(id: id, at: date)
    }
    func changes() -> AsyncStream<Void> { store.changes() }
    func changes(wanted: @escaping @Sendable () -> StoreChange) -> ChangeFeed { store.changes(wanted: wanted) }
    func claimDeliveries(as dispatcher: String, limit: Int, lease: Duration) async throws -> [ClaimedDelivery] {
        called()
        return try await store.claimDeliveries(as: dispatcher, limit: limit, lease: lease)
    }
    func record(_ claimed: ClaimedDelivery, outcome: DeliveryOutcome) async throws -> Bool {
        called()
        return try await store.record(claimed, outcome: outcome)
    }
    func deliveries(job: JobID?, limit: Int) async throws -> [WebhookDelivery] {
        called()
        return try await store.deliveries(job: job, limit: limit)
    }
    func redeliver(_ id: String) async throws -> WebhookDelivery {
        called()
        return try await store.redeliver(id)
    }
}

extension CountingStore: DashboardStore {
    func createSession(_ session: DashboardSession) async throws { try await store.createSession(session) }
    func session(idHash: String, at now: Date) async throws -> DashboardSession? {
        called()
        return try await store.session(idHash: idHash, at: now)
    }
    func deleteSession(idHash: String) async throws -> Bool { try await store.deleteSession(idHash: idHash) }
    func recordAudit(_ record: AuditRecord) async throws { try await store.recordAudit(record) }
    func auditRecords(job: JobID?, limit: Int) async throws -> [AuditRecord] {
        try await store.auditRecords(job: job, limit: limit)
    }
    func attempts(of job: JobID) async throws -> [JobAttempt] {
        called()
        return try await store.attempts(of: job)
    }
    func leaseExpiry(of job: JobID) async throws -> Date? {
        called()
        return try await store.leaseExpiry(of: job)
    }
    func indexSearchText(limit: Int) async throws -> Int {
        called()
        return try await store.indexSearchText(limit: limit)
    }
    func queuedAhead(of job: Job, owner: String?, at now: Date, limit: Int) async throws -> Int {
        try await store.queuedAhead(of: job, owner: owner, at: now, limit: limit)
    }
    func serverSecret(_ name: String, make: @Sendable () -> String) async throws -> String {
        try await store.serverSecret(name, make: make)
    }
}

extension CountingStore: FleetRecorder {
    func recordMinute(_ minute: Int64, at now: Date) async throws {
        called()
        try await store.recordMinute(minute, at: now)
    }
    func minutes(from first: Int64, through last: Int64) async throws -> [MinuteSample] {
        try await store.minutes(from: first, through: last)
    }
}
