import Queue
import Testing

@testable import Worker

/// `AttemptStateMachine`: every reachable state against every event, for the invariants that make
/// an attempt safe (one report, no output shown without a fresh fence, a lost lease touches
/// nothing), plus the named paths a worker takes.
@Suite("AttemptStateMachine")
struct AttemptStateMachineTests {
    typealias Machine = AttemptStateMachine
    typealias Event = (name: String, apply: @Sendable (inout Machine) -> Machine.Action)

    static let retryable = JobError(code: .outputUnwritable, message: "disk full", retryable: true)
    static let final = JobError(code: .decodeFailed, message: "corrupt", retryable: false)

    /// Every event, with every interesting argument.
    static let events: [Event] = {
        var events: [Event] = []
        for reason in [Machine.StopReason.cancelRequested, .leaseLost, .handBack] {
            events.append(("stop(\(reason))", { $0.stop(reason) }))
        }
        for state in [LeaseState.lost, .held(cancelRequested: true), .held(cancelRequested: false)] {
            events.append(("heartbeat(\(state))", { $0.heartbeat(state) }))
        }
        for outcome in [
            Machine.ExportOutcome.finished(.rename), .finished(.upload), .cancelled, .failed(retryable), .failed(final),
            .fannedOut,
        ] {
            events.append(("exportEnded(\(outcome))", { $0.exportEnded(outcome) }))
        }
        for answer in [
            Machine.FenceAnswer.held(cancelRequested: false, late: false), .held(cancelRequested: true, late: false),
            .held(cancelRequested: false, late: true), .held(cancelRequested: true, late: true), .lost,
            .unanswered(deadlinePassed: true), .unanswered(deadlinePassed: false),
        ] {
            events.append(("fenced(\(answer))", { $0.fenced(answer) }))
        }
        events.append(("renamed(success)", { $0.renamed(.success(())) }))
        events.append(("renamed(failure)", { $0.renamed(.failure(retryable)) }))
        for outcome in [
            Machine.UploadOutcome.uploaded(bytes: 10), .failed(retryable), .failed(final), .stopped,
            .retry(after: .seconds(1)),
        ] {
            events.append(("uploadEnded(\(outcome))", { $0.uploadEnded(outcome) }))
        }
        events.append(("retryDelayElapsed", { $0.retryDelayElapsed() }))
        for accepted in [true, false, nil] as [Bool?] {
            events.append(("reported(\(String(describing: accepted)))", { $0.reported(accepted: accepted) }))
        }
        return events
    }()

    /// Every state reachable from a fresh attempt (attempt 1 of 3, and the last of 3).
    static let reachable: [Machine] = {
        var seen: Set<Machine> = []
        var frontier = [Machine(attempt: 1, maxAttempts: 3), Machine(attempt: 3, maxAttempts: 3)]
        while let state = frontier.popLast() {
            guard seen.insert(state).inserted else { continue }
            for event in events {
                var next = state
                _ = event.apply(&next)
                if !seen.contains(next) { frontier.append(next) }
            }
        }
        return Array(seen)
    }()

    @Test("the reachable states cover every phase and stop reason")
    func coverage() {
        let phases = Set(Self.reachable.map { "\($0.phase)".prefix { $0 != "(" } })
        #expect(phases == ["exporting", "committing", "uploading", "reporting", "ended"])
        #expect(Set(Self.reachable.map(\.stopReason)) == [nil, .cancelRequested, .leaseLost, .handBack])
        #expect(Self.reachable.count > 40, "\(Self.reachable.count) states")
    }

    @Test("every state x event: the invariants hold")
    func everyStateAndEvent() {
        for state in Self.reachable {
            for event in Self.events {
                var next = state
                let action = event.apply(&next)
                let pair = "\(state.phase) stop=\(String(describing: state.stopReason)) on \(event.name) -> \(action)"
                // Once the outcome is being reported the attempt no longer listens: only the
                // report's answer moves it, and only once.
                if !state.isListening {
                    if case .reporting = state.phase, event.name.hasPrefix("reported") {
                        guard case .end(_, discardOutput: false) = action else {
                            Issue.record("a report's answer ends the attempt: \(pair)")
                            continue
                        }
                    } else {
                        #expect(action == .none && next == state, "ignored: \(pair)")
                    }
                    continue
                }
                // The first stop reason wins.
                if let reason = state.stopReason { #expect(next.stopReason == reason, "first reason wins: \(pair)") }
                switch action {
                case .rename:
                    // Renamed into place only right after the store renewed the lease in time.
                    #expect(state.phase == .committing(.rename), "\(pair)")
                    #expect(event.name.hasPrefix("fenced(held(") && event.name.contains("late: false"), "\(pair)")
                    #expect(next.stopReason == nil || next.stopReason == .handBack, "\(pair)")
                case .upload:
                    #expect(state.phase == .committing(.upload), "\(pair)")
                    #expect(event.name == "fenced(held(cancelRequested: false, late: false))", "\(pair)")
                    #expect(next.stopReason == nil, "\(pair)")
                case .report(let report, let discard):
                    #expect(next.phase == .reporting(report), "\(pair)")
                    // A lost lease hands nothing back and confirms nothing. An outcome already
                    // decided (a failure, an output shown just before the loss) is still
                    // reported, and the store, which fences every write, refuses it.
                    if next.stopReason == .leaseLost {
                        switch report {
                        case .fail, .complete: break
                        case .release, .confirmCancelled: Issue.record("a lost lease reports \(report): \(pair)")
                        }
                    }
                    // An output that was never shown is discarded.
                    if case .uploading = state.phase { #expect(discard, "\(pair)") }
                    if case .committing = state.phase, event.name.hasPrefix("fenced") { #expect(discard, "\(pair)") }
                case .end(.fannedOut, let discard):
                    // A fan-out is its own report (the store call that made the children).
                    #expect(state.phase == .exporting && event.name == "exportEnded(fannedOut)", "\(pair)")
                    #expect(!discard && next.phase == .ended(.fannedOut), "\(pair)")
                case .end(let outcome, _):
                    #expect(
                        outcome == .leaseLost && next.stopReason == .leaseLost,
                        "only a lost lease ends without a report: \(pair)"
                    )
                    #expect(next.phase == .ended(.leaseLost), "\(pair)")
                case .cancelExport:
                    #expect(state.phase == .exporting && state.stopReason == nil && next.stopReason != nil, "\(pair)")
                case .fence(let delivery, _):
                    #expect(next.phase == .committing(delivery), "\(pair)")
                case .waitToRetryUpload:
                    #expect(state.phase == .uploading && next.phase == .uploading, "\(pair)")
                case .none:
                    break
                }
            }
        }
    }

    @Test("along every path of up to 6 events: at most one report and one end, in that order")
    func oneReportPerAttempt() {
        func walk(_ state: Machine, depth: Int, reports: Int, ends: Int, path: [String]) {
            guard depth > 0 else { return }
            for event in Self.events {
                var next = state
                let action = event.apply(&next)
                var (reports, ends) = (reports, ends)
                if case .report = action { reports += 1 }
                if case .end = action { ends += 1 }
                let fannedOut = next.phase == .ended(.fannedOut)
                guard reports <= 1, ends <= 1,
                    !(ends == 1 && reports == 0 && next.stopReason != .leaseLost && !fannedOut)
                else {
                    Issue.record("\(path + [event.name]): \(reports) reports, \(ends) ends")
                    return
                }
                // States repeat a lot; the depth keeps this to about a million steps.
                if next != state {
                    walk(next, depth: depth - 1, reports: reports, ends: ends, path: path + [event.name])
                }
            }
        }
        walk(Machine(attempt: 1, maxAttempts: 3), depth: 6, reports: 0, ends: 0, path: [])
    }

    // MARK: The paths a worker takes

    /// Runs `events` from a fresh attempt and returns the actions.
    private func run(
        _ steps: [(inout Machine) -> Machine.Action],
        attempt: Int = 1,
        maxAttempts: Int = 3
    ) -> ([Machine.Action], Machine) {
        var machine = Machine(attempt: attempt, maxAttempts: maxAttempts)
        return (steps.map { $0(&machine) }, machine)
    }

    @Test("a local output: fence, rename, complete")
    func localOutput() {
        let (actions, machine) = run([
            { $0.exportEnded(.finished(.rename)) }, { $0.fenced(.held(cancelRequested: false, late: false)) },
            { $0.renamed(.success(())) }, { $0.reported(accepted: true) },
        ])
        #expect(
            actions == [
                .fence(.rename, after: .zero), .rename, .report(.complete(uploadedBytes: nil), discardOutput: false),
                .end(.completed, discardOutput: false),
            ]
        )
        #expect(machine.phase == .ended(.completed))
    }

    @Test("an upload: fenced before every PUT, retried within the attempt, then complete")
    func uploadWithRetry() {
        let (actions, _) = run([
            { $0.exportEnded(.finished(.upload)) }, { $0.fenced(.held(cancelRequested: false, late: false)) },
            { $0.uploadEnded(.retry(after: .seconds(2))) }, { $0.retryDelayElapsed() },
            { $0.fenced(.held(cancelRequested: false, late: false)) }, { $0.uploadEnded(.uploaded(bytes: 42)) },
            { $0.reported(accepted: true) },
        ])
        #expect(
            actions == [
                .fence(.upload, after: .zero), .upload, .waitToRetryUpload(.seconds(2)), .fence(.upload, after: .zero),
                .upload,
                .report(.complete(uploadedBytes: 42), discardOutput: true), .end(.completed, discardOutput: false),
            ]
        )
    }

    @Test("a lease lost while frozen before the PUT: nothing uploaded, nothing reported, output discarded")
    func frozenBeforeUpload() {
        let (actions, machine) = run([{ $0.exportEnded(.finished(.upload)) }, { $0.fenced(.lost) }])
        #expect(actions == [.fence(.upload, after: .zero), .end(.leaseLost, discardOutput: true)])
        #expect(machine.stopReason == .leaseLost)
    }

    @Test("a lease renewed too late to trust: the job is handed back, the output discarded")
    func renewedTooLate() {
        let (actions, _) = run([
            { $0.exportEnded(.finished(.rename)) }, { $0.fenced(.held(cancelRequested: false, late: true)) },
            { $0.reported(accepted: true) },
        ])
        #expect(
            actions == [
                .fence(.rename, after: .zero), .report(.release, discardOutput: true),
                .end(.handedBack, discardOutput: false),
            ]
        )
    }

    @Test("a store that does not answer the fence is asked again until the deadline, then the lease counts as lost")
    func fenceUnanswered() {
        let (actions, _) = run([
            { $0.exportEnded(.finished(.rename)) }, { $0.fenced(.unanswered(deadlinePassed: false)) },
            { $0.fenced(.unanswered(deadlinePassed: true)) },
        ])
        #expect(
            actions == [
                .fence(.rename, after: .zero), .fence(.rename, after: .milliseconds(250)),
                .end(.leaseLost, discardOutput: true),
            ]
        )
    }

    @Test("a fence that keeps going unanswered while renewals push the deadline on gives up after maxUnansweredFences")
    func fenceUnansweredForever() {
        let unanswered: [(inout Machine) -> Machine.Action] = Array(
            repeating: { $0.fenced(.unanswered(deadlinePassed: false)) },
            count: Machine.maxUnansweredFences
        )
        let (actions, _) = run([{ $0.exportEnded(.finished(.rename)) }] + unanswered)
        #expect(actions.count == Machine.maxUnansweredFences + 1)
        #expect(actions.dropLast().allSatisfy { $0 != .end(.leaseLost, discardOutput: true) })
        #expect(actions.last == .end(.leaseLost, discardOutput: true))
    }

    @Test("a cancellation during the export stops it and is confirmed; one found at the fence discards the output")
    func cancellation() {
        let (during, _) = run([
            { $0.heartbeat(.held(cancelRequested: true)) }, { $0.exportEnded(.cancelled) },
            { $0.reported(accepted: true) },
        ])
        #expect(
            during == [
                .cancelExport, .report(.confirmCancelled, discardOutput: false), .end(.cancelled, discardOutput: false),
            ]
        )
        let (atFence, _) = run([
            { $0.exportEnded(.finished(.rename)) }, { $0.fenced(.held(cancelRequested: true, late: false)) },
        ])
        #expect(atFence == [.fence(.rename, after: .zero), .report(.confirmCancelled, discardOutput: true)])
    }

    @Test("a drain that runs out hands the job back; a job that finished anyway is still completed")
    func drain() {
        let (stopped, _) = run([
            { $0.stop(.handBack) }, { $0.exportEnded(.cancelled) }, { $0.reported(accepted: true) },
        ])
        #expect(
            stopped == [
                .cancelExport, .report(.release, discardOutput: false), .end(.handedBack, discardOutput: false),
            ]
        )
        let (finished, _) = run([
            { $0.stop(.handBack) }, { $0.exportEnded(.finished(.rename)) },
            { $0.fenced(.held(cancelRequested: false, late: false)) },
        ])
        #expect(finished == [.cancelExport, .fence(.rename, after: .zero), .rename])
        let (upload, _) = run([
            { $0.stop(.handBack) }, { $0.exportEnded(.finished(.upload)) },
            { $0.fenced(.held(cancelRequested: false, late: false)) },
        ])
        #expect(
            upload == [.cancelExport, .fence(.upload, after: .zero), .report(.release, discardOutput: true)],
            "an upload is not started during a drain"
        )
    }

    @Test("a failure is retried while attempts remain and retryable; the store's answer decides the outcome")
    func failures() {
        typealias Step = (inout Machine) -> Machine.Action
        let failRetryable: Step = { $0.exportEnded(.failed(Self.retryable)) }
        let failFinal: Step = { $0.exportEnded(.failed(Self.final)) }
        let accepted: Step = { $0.reported(accepted: true) }
        let refused: Step = { $0.reported(accepted: false) }
        let unreachable: Step = { $0.reported(accepted: nil) }
        let retried = run([failRetryable, accepted]).0.last
        let lastAttempt = run([failRetryable, accepted], attempt: 3).0.last
        let final = run([failFinal, accepted]).0.last
        let lost = run([failFinal, refused]).0.last
        let unreported = run([failFinal, unreachable]).0.last
        let renameFailed = run([
            { $0.exportEnded(.finished(.rename)) }, { $0.fenced(.held(cancelRequested: false, late: false)) },
            { $0.renamed(.failure(Self.retryable)) },
        ]).0.last
        #expect(retried == .end(.retried, discardOutput: false))
        #expect(lastAttempt == .end(.failed, discardOutput: false))
        #expect(final == .end(.failed, discardOutput: false))
        #expect(lost == .end(.leaseLost, discardOutput: false))
        #expect(unreported == .end(.unreported, discardOutput: false))
        #expect(renameFailed == .report(.fail(Self.retryable), discardOutput: false))
    }

    @Test("a heartbeat that finds the lease lost stops the export; nothing is reported")
    func leaseLostDuringExport() {
        let (actions, machine) = run([
            { $0.heartbeat(.lost) }, { $0.heartbeat(.held(cancelRequested: true)) }, { $0.exportEnded(.cancelled) },
        ])
        #expect(actions == [.cancelExport, .none, .end(.leaseLost, discardOutput: false)])
        #expect(machine.stopReason == .leaseLost)
    }
}
