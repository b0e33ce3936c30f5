import Synchronization

/// `/healthz`: whether the job database answers one trivial statement (`JobStore.ping`), asked
/// at most once per `lifetime` however many clients ask: callers meanwhile share the answer,
/// or the one ping in flight. The route is open (load balancers call it without a key), so it
/// must cost the database nothing that grows with the job table or with the callers (it once
/// counted every job by status: 150 ms a call at a million jobs).
final class HealthProbe: Sendable {
    private struct State {
        var last: (healthy: Bool, at: ContinuousClock.Instant)?
        var inFlight: Task<Bool, Never>?
    }
    private let state = Mutex(State())
    private let ping: @Sendable () async throws -> Void
    private let lifetime: Duration

    init(lifetime: Duration = .seconds(1), ping: @escaping @Sendable () async throws -> Void) {
        self.lifetime = lifetime
        self.ping = ping
    }

    /// Whether the database answered its latest ping.
    func healthy() async -> Bool {
        enum Next {
            case known(Bool)
            case wait(Task<Bool, Never>)
        }
        let next = state.withLock { state -> Next in
            if let last = state.last, ContinuousClock.now < last.at + lifetime { return .known(last.healthy) }
            if let running = state.inFlight { return .wait(running) }
            let task = Task { [ping] in
                let healthy: Bool
                do {
                    try await ping()
                    healthy = true
                } catch {
                    healthy = false
                }
                self.state.withLock { state in
                    state.last = (healthy, .now)
                    state.inFlight = nil
                }
                return healthy
            }
            state.inFlight = task
            return .wait(task)
        }
        switch next {
        case .known(let healthy): return healthy
        case .wait(let task): return await task.value
        }
    }
}
