import Foundation
import QueueTestKit
import Testing
import Webhooks

/// The delivery retry schedule (docs/spec.md §6): 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every
/// 2 h until 24 h after the event, ±10 % jitter; Retry-After within 1 s…2 h, never undercut.
@Suite("DeliverySchedule")
struct DeliveryScheduleTests {
    static let expected: [(attempt: Int, seconds: Double)] = [
        (1, 5), (2, 30), (3, 120), (4, 600), (5, 1800), (6, 3600), (7, 7200), (8, 7200), (9, 7200), (12, 7200),
    ]

    func seconds(_ duration: Duration?) -> Double? {
        duration.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    @Test("the delays after attempts 1…6, then 2 h, within ±10 %")
    func delays() throws {
        let schedule = DeliverySchedule()
        var generator = SplitMix64(seed: 42)
        for (attempt, base) in Self.expected {
            var samples: [Double] = []
            for _ in 0..<200 {
                let delay = schedule.delay(afterAttempt: attempt, eventAge: .zero, retryAfter: nil, using: &generator)
                samples.append(try #require(seconds(delay), "attempt \(attempt) at age 0 is retried"))
            }
            let low = samples.min()!
            let high = samples.max()!
            #expect(
                low >= base * 0.9 - 0.001 && high <= base * 1.1 + 0.001,
                "attempt \(attempt): \(low)…\(high) s, expected \(base) s ± 10 %"
            )
            #expect(high - low > base * 0.05, "attempt \(attempt): jittered (\(low)…\(high) s)")
            let mean = samples.reduce(0, +) / Double(samples.count)
            #expect(abs(mean - base) < base * 0.03, "attempt \(attempt): centred on \(base) s, mean \(mean) s")
        }
    }

    @Test("without jitter, the exact schedule")
    func exact() {
        let schedule = DeliverySchedule(jitter: 0)
        var generator = SplitMix64(seed: 1)
        for (attempt, base) in Self.expected {
            let delay = schedule.delay(afterAttempt: attempt, eventAge: .zero, retryAfter: nil, using: &generator)
            #expect(delay == .seconds(base), "attempt \(attempt)")
        }
    }

    @Test("the same seed gives the same delays")
    func reproducible() {
        let schedule = DeliverySchedule()
        var a = SplitMix64(seed: 7)
        var b = SplitMix64(seed: 7)
        var c = SplitMix64(seed: 8)
        let first = (1...8).map { schedule.delay(afterAttempt: $0, eventAge: .zero, retryAfter: nil, using: &a) }
        let second = (1...8).map { schedule.delay(afterAttempt: $0, eventAge: .zero, retryAfter: nil, using: &b) }
        let other = (1...8).map { schedule.delay(afterAttempt: $0, eventAge: .zero, retryAfter: nil, using: &c) }
        #expect(first == second)
        #expect(first != other)
    }

    @Test("nil once the next attempt would come more than 24 h after the event")
    func givesUpAfter24Hours() {
        let schedule = DeliverySchedule()
        var generator = SplitMix64(seed: 3)
        let hour = Duration.seconds(3600)
        for _ in 0..<50 {
            #expect(
                schedule.delay(afterAttempt: 7, eventAge: hour * 23.5, retryAfter: nil, using: &generator) == nil,
                "23.5 h + 2 h"
            )
            #expect(
                schedule.delay(afterAttempt: 12, eventAge: hour * 22.5, retryAfter: nil, using: &generator) == nil,
                "22.5 h + 2 h"
            )
            #expect(
                schedule.delay(afterAttempt: 7, eventAge: hour * 21, retryAfter: nil, using: &generator) != nil,
                "21 h + 2 h"
            )
            #expect(
                schedule.delay(afterAttempt: 1, eventAge: hour * 24, retryAfter: nil, using: &generator) == nil,
                "24 h + 5 s"
            )
            #expect(
                schedule.delay(afterAttempt: 1, eventAge: .seconds(24 * 3600 - 60), retryAfter: nil, using: &generator)
                    != nil,
                "23 h 59 min + 5 s"
            )
            #expect(
                schedule.delay(afterAttempt: 6, eventAge: hour * 23.5, retryAfter: nil, using: &generator) == nil,
                "23.5 h + 1 h"
            )
            #expect(
                schedule.delay(afterAttempt: 3, eventAge: hour * 25, retryAfter: nil, using: &generator) == nil,
                "older than 24 h"
            )
        }
        // The whole schedule from a fresh event: 17 retries, the last one before 24 h.
        var age = Duration.zero
        var retries = 0
        let exact = DeliverySchedule(jitter: 0)
        while let delay = exact.delay(afterAttempt: retries + 1, eventAge: age, retryAfter: nil, using: &generator) {
            retries += 1
            age += delay
            if retries > 100 { break }
        }
        #expect(age <= hour * 24)
        // 5 s + 30 s + 2 min + 10 min + 30 min + 1 h = 6155 s; then 2 h steps while ≤ 24 h: 11 more (85 355 s).
        #expect(retries == 17, "retries before giving up: \(retries), the last at \(age)")
        #expect(age == .seconds(85_355))
    }

    @Test("Retry-After is used, clamped to 1 s…2 h")
    func retryAfter() throws {
        let exact = DeliverySchedule(jitter: 0)
        var generator = SplitMix64(seed: 5)
        #expect(
            exact.delay(afterAttempt: 1, eventAge: .zero, retryAfter: .seconds(7), using: &generator) == .seconds(7),
            "instead of 5 s"
        )
        #expect(
            exact.delay(afterAttempt: 6, eventAge: .zero, retryAfter: .seconds(7), using: &generator) == .seconds(7),
            "instead of 1 h"
        )
        #expect(
            exact.delay(afterAttempt: 1, eventAge: .zero, retryAfter: .zero, using: &generator) == .seconds(1),
            "0 s → 1 s"
        )
        #expect(
            exact.delay(afterAttempt: 1, eventAge: .zero, retryAfter: .milliseconds(300), using: &generator)
                == .seconds(1),
            "0.3 s → 1 s"
        )
        #expect(
            exact.delay(afterAttempt: 1, eventAge: .zero, retryAfter: .seconds(3 * 3600), using: &generator)
                == .seconds(7200),
            "3 h → 2 h"
        )
        #expect(
            exact.delay(afterAttempt: 1, eventAge: .zero, retryAfter: .seconds(86_400 * 30), using: &generator)
                == .seconds(7200),
            "30 days → 2 h"
        )
        #expect(
            exact.delay(afterAttempt: 1, eventAge: .seconds(23 * 3600), retryAfter: .seconds(7200), using: &generator)
                == nil,
            "past 24 h"
        )

        let jittered = DeliverySchedule()
        for _ in 0..<100 {
            let delay = try #require(
                seconds(jittered.delay(afterAttempt: 2, eventAge: .zero, retryAfter: .seconds(7), using: &generator))
            )
            // Never earlier than the receiver asked; jitter only adds.
            #expect(delay >= 7 - 0.001 && delay <= 7.7 + 0.001, "Retry-After 7 s: \(delay) s")
        }
    }

    @Test("scale multiplies the delays and the 24 h limit")
    func scale() {
        let schedule = DeliverySchedule(scale: 0.01, jitter: 0)
        var generator = SplitMix64(seed: 9)
        let scaled: [(Int, Duration)] = [
            (1, .milliseconds(50)), (2, .milliseconds(300)), (3, .milliseconds(1200)), (4, .seconds(6)),
            (5, .seconds(18)), (6, .seconds(36)),
            (7, .seconds(72)), (9, .seconds(72)),
        ]
        for (attempt, expected) in scaled {
            #expect(
                schedule.delay(afterAttempt: attempt, eventAge: .zero, retryAfter: nil, using: &generator) == expected,
                "attempt \(attempt)"
            )
        }
        // The limit is 864 s (24 h × 0.01).
        #expect(
            schedule.delay(afterAttempt: 7, eventAge: .seconds(800), retryAfter: nil, using: &generator) == nil,
            "800 s + 72 s > 864 s"
        )
        #expect(
            schedule.delay(afterAttempt: 7, eventAge: .seconds(700), retryAfter: nil, using: &generator)
                == .seconds(72),
            "700 s + 72 s ≤ 864 s"
        )
        let jittered = DeliverySchedule(scale: 0.01)
        for _ in 0..<50 {
            let delay = jittered.delay(afterAttempt: 1, eventAge: .zero, retryAfter: nil, using: &generator)
            #expect(
                delay.map { $0 >= .milliseconds(45) && $0 <= .milliseconds(55) } == true,
                "\(String(describing: delay))"
            )
        }
    }
}
