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
            childIndex: request.childIndex,
            role: request.role
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
            let ids = JobID.makeAscending(children.count, at: now)
            return zip(children, ids).enumerated().map { index, pair in
                let (request, id) = pair
                let child = MemoryJobStore.job(
                    request.child(of: lease.jobID, index: index, owner: parent.job.owner),
                    id: id,
                    now: now,
                    createdAt: parent.job.createdAt
                )
                tables.jobs[child.id] = Record(job: child, attemptBudget: request.maxAttempts)
                return child.id
            }
        }
    }

    /// A job's transition is written: its webhook event if it ended, and its end counted on its
    /// parent (`JobGraphStateMachine`), in the same write.
    static func recorded(_ job: Job, _ tables: inout Tables, now: Date) {
        enqueueEvent(for: job, &tables, now: now)
        guard let parent = job.parent, let event = JobGraphStateMachine.childEvent(for: job.status) else { return }
        _ = applyToParent(parent, event, child: job, &tables, now: now)
        refreshProgress(ofParent: parent, &tables)
    }

    /// A waiting parent's progress: its children's, weighted by the media each covers (its
    /// range's duration; 1 s for a child without one).
    static func refreshProgress(ofParent id: JobID, _ tables: inout Tables) {
        guard var parent = tables.jobs[id], parent.job.status == .reading, parent.leaseToken == nil else { return }
        let children = tables.jobs.values.map(\.job).filter { $0.parent == id }
        let weights = children.map { $0.range?.duration ?? 1 }
        let total = weights.reduce(0, +)
        guard total > 0 else { return }
        parent.job.progress = zip(children, weights).map { $0.progress * $1 }.reduce(0, +) / total
        tables.jobs[id] = parent
    }

    /// `event` applied to the parent `id` and, by its command, to its children. Returns the
    /// parent after it, or `nil` when the machine does not allow the event.
    @discardableResult
    static func applyToParent(
        _ id: JobID,
        _ event: JobGraphStateMachine.Event,
        child: Job?,
        _ tables: inout Tables,
        now: Date
    ) -> Job? {
        guard var record = tables.jobs[id], let children = record.job.children else { return nil }
        let state = JobGraphStateMachine.State(
            job: record.machineState,
            phase: record.job.graphPhase,
            children: children
        )
        guard let (next, command) = JobGraphStateMachine.next(state, on: event) else { return nil }
        let ended = !state.job.status.isTerminal && next.job.status.isTerminal
        record.job.status = next.job.status
        record.job.cancelRequested = next.job.cancelRequested
        record.job.attempt = next.job.attempt
        record.job.maxAttempts = next.job.maxAttempts
        record.crashes = next.job.crashes
        record.job.children = next.children
        if next.job.status == .unknown || (next.job.status == .reading && state.job.status != .reading) {
            // The join is queued, or a retried parent waits for its children again.
            record.job.runAt = now
            record.job.finishedAt = nil
            record.job.error = nil
            record.job.result = nil
        }
        if ended {
            record.job.finishedAt = now
            if next.job.status == .failed, let child {
                record.job.error = JobGraphStateMachine.parentError(child: child.childIndex, child.error)
            }
        }
        if JobGraphStateMachine.listsOutputs(from: state, to: next, on: event) {
            record.job.result = JobGraphStateMachine.outputs(
                of: tables.jobs.values.map(\.job).filter { $0.parent == id }
            )
        }
        tables.jobs[id] = record
        if ended { enqueueEvent(for: record.job, &tables, now: now) }
        switch command {
        case .none: break
        case .cancelActive:
            // Queued children end now (each counted on the parent); running ones are asked to stop.
            for childID in tables.jobs.keys.sorted() where tables.jobs[childID]?.job.parent == id {
                guard var child = tables.jobs[childID], !child.job.status.isTerminal,
                    let after = child.apply(.cancel)
                else { continue }
                if after.status == .cancelled { child.job.finishedAt = now }
                tables.jobs[childID] = child
                if after.status == .cancelled { recorded(child.job, &tables, now: now) }
            }
        case .rerunUnfinished:
            for childID in tables.jobs.keys.sorted() where tables.jobs[childID]?.job.parent == id {
                guard var child = tables.jobs[childID], child.job.status == .failed || child.job.status == .cancelled,
                    child.apply(.retry(force: true)) != nil
                else { continue }
                child.job.runAt = now
                child.job.progress = 0
                child.job.result = nil
                child.job.error = nil
                child.job.finishedAt = nil
                tables.jobs[childID] = child
            }
        }
        return tables.jobs[id]?.job
    }
}
