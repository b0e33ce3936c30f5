import Foundation

// Job graphs (issue 27) in memory, and the row a submit or a fan-out writes.
extension MemoryJobStore {
    /// The row `submit` (and a fan-out) writes.
    static func job(_ request: JobRequest, id: JobID, now: Date, createdAt: Date? = nil) -> Job {
        Job(
            id: id,
            kind: request.kind,
            status: .unknown,
            input: request.input,
            output: request.output,
            preset: request.preset,
            presetSettings: request.presetSettings,
            format: request.format,
            range: request.range,
            priority: request.priority,
            attempt: 0,
            maxAttempts: request.maxAttempts,
            progress: 0,
            tracks: [],
            result: nil,
            error: nil,
            webhook: request.webhook,
            metadata: request.metadata,
            idempotencyKey: request.idempotencyKey,
            worker: nil,
            cancelRequested: false,
            runAt: now,
            createdAt: createdAt ?? now,
            startedAt: nil,
            finishedAt: nil,
            owner: request.owner,
            parent: request.parent,
            childIndex: request.childIndex
        )
    }

    public func fanOut(_ lease: Lease, children: [JobRequest]) async throws -> [JobID]? {
        if let error = JobStoreError.childCount(children.count) { throw error }
        let now = self.now
        return write { tables in
            guard var parent = tables.jobs[lease.jobID], parent.holds(lease) else { return nil }
            let state = JobGraphStateMachine.State(
                job: parent.machineState,
                phase: parent.job.graphPhase,
                children: parent.job.children ?? JobGraphStateMachine.Children(total: 0)
            )
            guard let (next, _) = JobGraphStateMachine.next(state, on: .fanOut(children: children.count)) else {
                return nil
            }
            parent.job.attempt = next.job.attempt
            parent.crashes = next.job.crashes
            parent.job.children = next.children
            parent.job.progress = 0
            parent.leaseToken = nil
            parent.leaseExpiresAt = nil
            tables.jobs[lease.jobID] = parent
            return children.enumerated().map { index, request in
                var request = request
                (request.parent, request.childIndex, request.owner) = (lease.jobID, index, parent.job.owner)
                (request.webhook, request.idempotencyKey) = (nil, nil)
                let child = MemoryJobStore.job(
                    request,
                    id: JobID.make(at: now),
                    now: now,
                    createdAt: parent.job.createdAt
                )
                tables.jobs[child.id] = Record(job: child, attemptBudget: request.maxAttempts)
                return child.id
            }
        }
    }
}
