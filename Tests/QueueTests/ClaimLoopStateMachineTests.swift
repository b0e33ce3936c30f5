import Queue
import QueueTestKit
import Testing

/// `ClaimLoopStateMachine` with time passed in: claims, backoff, `--once`, and both kinds of
/// drain, without waiting for anything.
@Suite("ClaimLoopStateMachine")
struct ClaimLoopStateMachineTests {
    typealias Machine = ClaimLoopStateMachine
    let t0 = ContinuousClock.now

    func machine(
        concurrency: Int = 4,
        drain: Machine.Drain = .stopClaiming(handBackAfter: .seconds(30)),
        once: Bool = false
    ) -> Machine {
        Machine(Machine.Configuration(concurrency: concurrency, drain: drain, once: once))
    }

    @Test("claims the free slots, and nothing while they are full")
    func slots() {
        var m = machine()
        #expect(m.next(now: t0) == .claim(limit: 4))
        #expect(m.claimed(3, now: t0) == .wait)
        #expect(m.next(now: t0) == .claim(limit: 1))
        #expect(m.claimed(1, now: t0) == .wait)
        #expect(m.next(now: t0) == .wait)
        #expect(!m.hasFreeSlots)
        m.finished(2)
        #expect(m.hasFreeSlots)
        #expect(m.next(now: t0) == .claim(limit: 2))
    }

    @Test("a failed claim backs off 0.5 s, 1 s, 2 s … up to 10 s; a success resets it")
    func backoff() {
        var m = machine()
        var now = t0
        var waits: [Duration] = []
        for _ in 0..<7 {
            guard case .claim = m.next(now: now) else {
                Issue.record("no claim at \(now - t0)")
                return
            }
            #expect(m.claimFailed(.transient, now: now) == .wait)
            waits.append(m.backoff)
            #expect(m.next(now: now + m.backoff - .milliseconds(1)) == .wait, "not before the backoff")
            now = now + m.backoff
        }
        #expect(
            waits == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(10), .seconds(10),
            ]
        )
        #expect(m.claimed(0, now: now) == .wait)
        #expect(m.backoff == .zero)
        #expect(m.next(now: now) == .claim(limit: 4))
    }

    @Test("a damaged database: 10 s between claims; with --once, the end")
    func damaged() {
        var m = machine()
        _ = m.next(now: t0)
        #expect(m.claimFailed(.damaged, now: t0) == .wait)
        #expect(m.next(now: t0 + .seconds(9)) == .wait)
        #expect(m.next(now: t0 + .seconds(10)) == .claim(limit: 4))
        var once = machine(once: true)
        _ = once.next(now: t0)
        #expect(once.claimFailed(.damaged, now: t0) == .finish)
        #expect(once.next(now: t0 + .seconds(60)) == .finish, "finished stays finished")
    }

    @Test("--once ends when a claim finds nothing and nothing runs")
    func once() {
        var m = machine(once: true)
        _ = m.next(now: t0)
        #expect(m.claimed(2, now: t0) == .wait)
        _ = m.next(now: t0)
        #expect(m.claimed(0, now: t0) == .wait, "two still run")
        m.finished(2)
        _ = m.next(now: t0)
        #expect(m.claimed(0, now: t0) == .wait, "their slots are free, but their reports are not made yet")
        m.ended(2)
        _ = m.next(now: t0)
        #expect(m.claimed(0, now: t0) == .finish)
        #expect(m.next(now: t0) == .finish)
    }

    @Test("--once claims again after a report: the last child of a graph queues its parent's join")
    func onceAfterAReport() {
        var m = machine(once: true)
        _ = m.next(now: t0)
        #expect(m.claimed(1, now: t0) == .wait)
        m.finished(1)  // the slot is freed before the report
        #expect(m.next(now: t0) == .claim(limit: 4))
        #expect(m.claimed(0, now: t0) == .wait, "the report may still queue work")
        m.ended(1)
        #expect(m.next(now: t0) == .claim(limit: 4))
        #expect(m.claimed(1, now: t0) == .wait, "the join")
        m.finished(1)
        m.ended(1)
        _ = m.next(now: t0)
        #expect(m.claimed(0, now: t0) == .finish)
    }

    @Test("a worker's drain: no claim after the stop, the end when nothing runs, a hand-back after the drain time")
    func stopClaiming() {
        var m = machine(drain: .stopClaiming(handBackAfter: .seconds(30)))
        _ = m.next(now: t0)
        _ = m.claimed(2, now: t0)
        let began = m.stop(now: t0 + .seconds(1))
        let beganAgain = m.stop(now: t0 + .seconds(2))
        #expect(began)
        #expect(!beganAgain, "the drain begins once")
        #expect(!m.hasFreeSlots)
        #expect(m.next(now: t0 + .seconds(2)) == .wait)
        #expect(m.next(now: t0 + .seconds(31)) == .handBack)
        m.finished(1)
        #expect(m.next(now: t0 + .seconds(32)) == .handBack)
        m.finished(1)
        #expect(m.next(now: t0 + .seconds(33)) == .finish)
        var idle = machine()
        _ = idle.stop(now: t0)
        #expect(idle.next(now: t0) == .finish, "an idle worker stops at once")
    }

    @Test("a dispatcher's drain: keeps claiming what is due for its time, ends when nothing is due or runs")
    func claimDue() {
        var m = machine(drain: .claimDue(for: .seconds(10)))
        _ = m.stop(now: t0)
        #expect(m.next(now: t0 + .seconds(1)) == .claim(limit: 4))
        #expect(m.claimed(1, now: t0 + .seconds(1)) == .wait)
        #expect(m.next(now: t0 + .seconds(2)) == .claim(limit: 3))
        #expect(m.claimed(0, now: t0 + .seconds(2)) == .wait, "one still runs")
        m.finished(1)
        #expect(m.next(now: t0 + .seconds(3)) == .claim(limit: 4))
        #expect(m.claimed(0, now: t0 + .seconds(3)) == .finish, "nothing due, nothing running")

        var late = machine(drain: .claimDue(for: .seconds(10)))
        _ = late.next(now: t0)
        _ = late.claimed(1, now: t0)
        _ = late.stop(now: t0)
        #expect(late.next(now: t0 + .seconds(11)) == .wait, "past its time it only finishes what runs")
        late.finished(1)
        #expect(late.next(now: t0 + .seconds(12)) == .finish)

        var failing = machine(drain: .claimDue(for: .seconds(10)))
        _ = failing.next(now: t0)
        #expect(failing.claimFailed(.transient, now: t0) == .wait)
        _ = failing.stop(now: t0 + .milliseconds(100))
        #expect(failing.hasFreeSlots, "a dispatcher's drain still listens to notifications")
        #expect(
            failing.next(now: t0 + .milliseconds(200)) == .wait,
            "a pending backoff is waited out within the window, not taken for nothing due"
        )
        #expect(failing.next(now: t0 + .milliseconds(500)) == .claim(limit: 4))
        #expect(failing.claimFailed(.transient, now: t0 + .milliseconds(500)) == .wait)
        #expect(failing.next(now: t0 + .seconds(11)) == .finish, "the window over, nothing running: the end")

        var none = machine(drain: .claimDue(for: .zero))
        _ = none.stop(now: t0)
        #expect(none.next(now: t0) == .finish, "no time to drain: the end when nothing runs")
    }

    @Test(
        "random event sequences: never more running than the concurrency, no claim beyond the free slots or after the end"
    )
    func randomSequences() {
        var random = SplitMix64(seed: 10)
        for round in 0..<2000 {
            let concurrency = Int(random.next() % 4) + 1
            let drains: [Machine.Drain] = [.stopClaiming(handBackAfter: .seconds(5)), .claimDue(for: .seconds(5))]
            var m = machine(
                concurrency: concurrency,
                drain: drains[Int(random.next() % 2)],
                once: random.next() % 2 == 0
            )
            var now = t0
            var running = 0
            var ended = false
            for _ in 0..<40 {
                now = now + .milliseconds(Int64(random.next() % 3000))
                switch random.next() % 4 {
                case 0: _ = m.stop(now: now)
                case 1 where running > 0:
                    let count = Int(random.next() % UInt64(running)) + 1
                    running -= count
                    m.finished(count)
                default: break
                }
                let action = m.next(now: now)
                if ended { #expect(action == .finish, "round \(round): finished stays finished") }
                switch action {
                case .claim(let limit):
                    #expect(
                        limit >= 1 && limit == concurrency - running,
                        "round \(round): limit \(limit), running \(running)"
                    )
                    if case .stopClaiming = m.configuration.drain {
                        #expect(m.drainStarted == nil, "round \(round): claim during a worker's drain")
                    }
                    if random.next() % 5 == 0 {
                        if m.claimFailed(random.next() % 2 == 0 ? .transient : .damaged, now: now) == .finish {
                            ended = true
                        }
                    } else {
                        let count = Int(random.next() % UInt64(limit + 1))
                        running += count
                        if m.claimed(count, now: now) == .finish { ended = true }
                    }
                case .finish:
                    ended = true
                    if !m.configuration.once { #expect(running == 0, "round \(round): finished with work running") }
                case .handBack, .wait:
                    break
                }
                #expect(m.running == running && running <= concurrency, "round \(round)")
            }
        }
    }
}
