import Queue
import Testing

/// The job-graph state machine (issue 27), every (parent state, event) pair over small graphs,
/// before any of it is SQL.
@Suite("JobGraphStateMachine")
struct JobGraphTests {
    typealias Machine = JobGraphStateMachine
    typealias State = Machine.State

    /// Every parent state reachable from a queued job over graphs of 1 to 3 children (the
    /// machine itself explores them, breadth first; attempts bounded at 9).
    static let states: [State] = {
        let start = State(job: JobStateMachine.State(status: .unknown, attempt: 0, maxAttempts: 3))
        var seen: Set<State> = [start]
        var queue = [start]
        while let state = queue.popLast() {
            for event in events {
                guard let (next, _) = Machine.next(state, on: event), next.job.maxAttempts <= 9,
                    !seen.contains(next)
                else { continue }
                seen.insert(next)
                queue.append(next)
            }
        }
        return Array(seen)
    }()

    static let events: [Machine.Event] =
        [
            .fanOut(children: 1), .fanOut(children: 3), .fanOut(children: 0), .childCompleted, .childFailed,
            .childCancelled,
        ]
        + JobEvent.allCases.map { .job($0) }

    @Test("invariants hold for every state and event: children counted once, completed never lost")
    func invariants() {
        var allowed = 0
        for state in Self.states {
            for event in Self.events {
                guard let (next, command) = Machine.next(state, on: event) else { continue }
                allowed += 1
                let (before, after) = (state.children, next.children)
                let what = "\(state) on \(event) → \(next)"
                // Counts stay within the total and never go below zero.
                #expect(
                    after.active >= 0 && after.completed >= 0 && after.failed >= 0 && after.cancelled >= 0,
                    "\(what)"
                )
                // A completed child is never run again: the completed count never drops.
                #expect(after.completed >= before.completed || state.phase == .none, "\(what)")
                if case .fanOut = event {} else { #expect(after.total == before.total, "\(what)") }
                // A child event counts exactly one child.
                switch event {
                case .childCompleted, .childFailed, .childCancelled:
                    #expect(before.active - after.active == 1, "\(what)")
                default: break
                }
                // Completed only through the join's own end, with every child completed.
                if next.job.status == .completed && state.job.status != .completed {
                    #expect(event == .job(.complete) && next.phase != .waiting, "\(what)")
                    #expect(next.phase == .none || after.completed == after.total, "\(what)")
                }
                // Claimable (queued) only as a plain job or a join: never while children run.
                if next.job.status == .unknown { #expect(next.phase != .waiting, "\(what)") }
                // A waiting parent that is not running has ended.
                if next.phase == .waiting { #expect(next.job.status != .unknown, "\(what)") }
                // Ending while children are active cancels them, in the same transaction.
                if next.phase == .waiting, next.job.status.isTerminal, !state.job.status.isTerminal,
                    after.active > 0
                {
                    #expect(command == .cancelActive, "\(what)")
                }
                if command == .cancelActive { #expect(after.active > 0 && next.job.status.isTerminal, "\(what)") }
                // Children run again only on the parent's retry, and only the unfinished ones.
                if command == .rerunUnfinished {
                    #expect(event == .job(.retry(force: false)) || event == .job(.retry(force: true)), "\(what)")
                    #expect(
                        after.completed == before.completed && after.active == after.total - after.completed,
                        "\(what)"
                    )
                }
                // One outcome per run: an ended parent changes status only by being retried.
                if state.job.status.isTerminal, next.job.status != state.job.status {
                    #expect(event == .job(.retry(force: false)) || event == .job(.retry(force: true)), "\(what)")
                }
            }
        }
        #expect(Self.states.count > 1000, "\(Self.states.count) states reached")
        #expect(allowed > 1000)
        // The exploration reached every phase, and a waiting parent in each way it can end.
        #expect(Set(Self.states.map(\.phase)) == Set(Machine.Phase.allCases))
        for status in [JobStatus.reading, .failed, .cancelled] {
            #expect(Self.states.contains { $0.phase == .waiting && $0.job.status == status }, "\(status)")
        }
        #expect(Self.states.contains { $0.job.isPoisoned && $0.phase == .join })
    }

    @Test("a plain job is the job state machine, unchanged")
    func plainJob() {
        for state in Self.states where state.phase == .none {
            for event in JobEvent.allCases {
                #expect(Machine.next(state, on: .job(event))?.state.job == JobStateMachine.next(state.job, on: event))
            }
            for event in [Machine.Event.childCompleted, .childFailed, .childCancelled] {
                #expect(Machine.next(state, on: event) == nil, "\(state): a plain job has no children")
            }
        }
    }

    /// Runs `events` from a running first attempt, requiring each to be allowed.
    static func run(_ events: [Machine.Event], from start: State? = nil) throws -> [(State, Machine.ChildCommand)] {
        var state = start ?? State(job: JobStateMachine.State(status: .reading, attempt: 1, maxAttempts: 3))
        var trace: [(State, Machine.ChildCommand)] = []
        for event in events {
            let (next, command) = try #require(Machine.next(state, on: event), "\(state) refused \(event)")
            trace.append((next, command))
            state = next
        }
        return trace
    }

    @Test("fan out, children complete, the join is queued, claimed and completes; the fan-out attempt is not counted")
    func happyPath() throws {
        let trace = try Self.run([
            .fanOut(children: 3), .childCompleted, .childCompleted, .childCompleted, .job(.claim), .job(.complete),
        ])
        let (waiting, _) = trace[0]
        #expect(waiting.phase == .waiting && waiting.job.status == .reading && waiting.job.attempt == 0)
        #expect(trace[2].0.phase == .waiting && trace[2].0.job.status == .reading)
        let (queued, _) = trace[3]
        #expect(queued.phase == .join && queued.job.status == .unknown && queued.children.completed == 3)
        #expect(trace[4].0.job.status == .reading && trace[4].0.job.attempt == 1)
        #expect(trace[5].0.job.status == .completed)
    }

    @Test("a child that fails fails the parent and cancels its siblings; their ends only count")
    func childFails() throws {
        let trace = try Self.run([.fanOut(children: 3), .childCompleted, .childFailed, .childCancelled])
        #expect(trace[2].0.job.status == .failed && trace[2].1 == .cancelActive)
        #expect(trace[3].0.job.status == .failed && trace[3].1 == .none && trace[3].0.children.active == 0)
        // Retried: only the two that did not complete run again; the completed one stays.
        let retried = try Self.run([.job(.retry(force: false))], from: trace[3].0)
        #expect(retried[0].1 == .rerunUnfinished && retried[0].0.children == Machine.Children(total: 3, completed: 1))
        #expect(retried[0].0.job.status == .reading && retried[0].0.phase == .waiting)
    }

    @Test("cancelling a waiting parent ends it at once and cancels its children; retry waits for them to stop")
    func cancelWhileWaiting() throws {
        let trace = try Self.run([.fanOut(children: 2), .job(.cancel)])
        #expect(trace[1].0.job.status == .cancelled && trace[1].1 == .cancelActive)
        #expect(Machine.next(trace[1].0, on: .job(.retry(force: false))) == nil, "children still stopping")
        let stopped = try Self.run([.childCancelled, .childCompleted], from: trace[1].0)
        #expect(stopped[1].0.job.status == .cancelled, "a child that completed meanwhile does not revive it")
        let retried = try Self.run([.job(.retry(force: false))], from: stopped[1].0)
        #expect(retried[0].0.children == Machine.Children(total: 2, completed: 1) && retried[0].1 == .rerunUnfinished)
    }

    @Test("a parent that ends without completing lists what its completed children left, for every state and event")
    func listsOutputs() {
        for state in Self.states {
            for event in Self.events {
                guard let (next, _) = Machine.next(state, on: event) else { continue }
                let lists = Machine.listsOutputs(from: state, to: next, on: event)
                let what = "\(state) on \(event) → \(next)"
                // Only a parent stopped while waiting for its children: never a join, a retry,
                // a running or completed parent.
                if lists {
                    #expect(next.phase == .waiting && [.failed, .cancelled].contains(next.job.status), "\(what)")
                }
                // Every way it ends while waiting writes the list its webhook carries…
                if next.phase == .waiting, next.job.status.isTerminal, !state.job.status.isTerminal {
                    #expect(lists, "\(what)")
                }
                // …and a child completing after that (asked to stop too late) is added; other
                // late ends change nothing that stays.
                if state.phase == .waiting, state.job.status.isTerminal, next.job.status == state.job.status {
                    #expect(lists == (event == .childCompleted), "\(what)")
                }
            }
        }
        // Fanned out into 3; one completes; cancelled (listed); one completes late (listed again);
        // the last one is cancelled (nothing new).
        var state = State(job: JobStateMachine.State(status: .reading, attempt: 1, maxAttempts: 3))
        var lists: [Bool] = []
        for event in [
            Machine.Event.fanOut(children: 3), .childCompleted, .job(.cancel), .childCompleted, .childCancelled,
        ] {
            guard let (next, _) = Machine.next(state, on: event) else {
                Issue.record("\(state) refused \(event)")
                return
            }
            lists.append(Machine.listsOutputs(from: state, to: next, on: event))
            state = next
        }
        #expect(lists == [false, false, true, true, false])
    }

    @Test("a waiting parent has no lease: no claim, end, expiry or hand-back of its own")
    func waitingHasNoLease() throws {
        let waiting = try Self.run([.fanOut(children: 2)])[0].0
        for event in [JobEvent.claim, .complete, .fail(retryable: true), .leaseExpired, .release, .confirmCancelled] {
            #expect(Machine.next(waiting, on: .job(event)) == nil, "\(event)")
        }
        #expect(Machine.next(waiting, on: .fanOut(children: 1)) == nil, "fans out once")
    }

    @Test("the join is a job: its failure retries the join alone; a crash counts; a cancel asks its worker")
    func joinIsAJob() throws {
        let joined = try Self.run([.fanOut(children: 1), .childCompleted, .job(.claim)])[2].0
        let failed = try Self.run([.job(.fail(retryable: true))], from: joined)[0].0
        #expect(failed.phase == .join && failed.job.status == .unknown && failed.children.completed == 1)
        let crashed = try Self.run([.job(.claim), .job(.leaseExpired)], from: failed)[1].0
        #expect(crashed.job.crashes == 1 && crashed.phase == .join)
        let cancelling = try Self.run([.job(.claim), .job(.cancel)], from: crashed)[1].0
        #expect(cancelling.job.cancelRequested && cancelling.job.status == .reading)
        #expect(Machine.next(cancelling, on: .childCompleted) == nil, "no child is left to end")
    }

    @Test("only a running attempt nobody asked to stop fans out, into 1 to 10,000 children")
    func fanOutBounds() {
        let running = State(job: JobStateMachine.State(status: .reading, attempt: 1, maxAttempts: 3))
        #expect(Machine.next(running, on: .fanOut(children: 0)) == nil)
        #expect(Machine.next(running, on: .fanOut(children: Machine.maximumChildren + 1)) == nil)
        #expect(Machine.next(running, on: .fanOut(children: Machine.maximumChildren)) != nil)
        var stopping = running
        stopping.job.cancelRequested = true
        #expect(Machine.next(stopping, on: .fanOut(children: 2)) == nil)
        for status in [JobStatus.unknown, .completed, .failed, .cancelled] {
            var other = running
            other.job.status = status
            #expect(Machine.next(other, on: .fanOut(children: 2)) == nil, "\(status)")
        }
    }
}
