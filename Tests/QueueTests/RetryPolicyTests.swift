import Queue
import QueueTestKit
import Testing

@Suite("RetryPolicy")
struct RetryPolicyTests {
    /// base · 2^(attempt-1), capped, in milliseconds (the default policy: 5 s, 600 s).
    static func nominal(_ attempt: Int, base: Int64 = 5_000, maximum: Int64 = 600_000) -> Int64 {
        let exponent = max(attempt - 1, 0)
        guard exponent < 40 else { return maximum }
        return min(base << Int64(exponent), maximum)
    }

    @Test("without jitter the delay doubles with each attempt, up to the maximum")
    func exponential() {
        let policy = RetryPolicy(base: .seconds(5), maximum: .seconds(600), jitter: 0)
        var generator = SplitMix64(seed: 1)
        let delays = (1...10).map { policy.delay(afterAttempt: $0, using: &generator) }
        #expect(delays == [5, 10, 20, 40, 80, 160, 320, 600, 600, 600].map { Duration.seconds($0) })
        #expect(policy.delay(afterAttempt: 0, using: &generator) == .seconds(5), "attempt 0 is treated as 1")
        #expect(policy.delay(afterAttempt: 31, using: &generator) == .seconds(600))
        #expect(
            policy.delay(afterAttempt: 1_000, using: &generator) == .seconds(600),
            "a huge attempt does not overflow"
        )
        #expect(policy.delay(afterAttempt: .max, using: &generator) == .seconds(600))
    }

    @Test("sub-second bases and a maximum equal to the base")
    func otherShapes() {
        var generator = SplitMix64(seed: 2)
        let fast = RetryPolicy(base: .milliseconds(250), maximum: .seconds(2), jitter: 0)
        #expect(
            (1...6).map { fast.delay(afterAttempt: $0, using: &generator) }
                == [250, 500, 1_000, 2_000, 2_000, 2_000].map { Duration.milliseconds($0) }
        )
        let flat = RetryPolicy(base: .seconds(1), maximum: .seconds(1), jitter: 0)
        #expect(
            (1...5).map { flat.delay(afterAttempt: $0, using: &generator) } == Array(repeating: .seconds(1), count: 5)
        )
    }

    @Test(
        "with jitter the delay stays within [1 - jitter, 1] × the nominal delay, and spreads over it",
        arguments: [0.5, 0.2, 1.0]
    )
    func jitter(_ jitter: Double) {
        let policy = RetryPolicy(base: .seconds(5), maximum: .seconds(600), jitter: jitter)
        for attempt in 1...12 {
            var generator = SplitMix64(seed: UInt64(attempt) &* 7919)
            let nominal = Self.nominal(attempt)
            // Less 1 ms for the truncation to milliseconds.
            let lower = Int64((Double(nominal) * (1 - jitter)).rounded(.down)) - 1
            var samples: [Int64] = []
            for _ in 0..<500 {
                let delay = policy.delay(afterAttempt: attempt, using: &generator)
                let milliseconds =
                    delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000
                samples.append(milliseconds)
                #expect(
                    milliseconds >= lower && milliseconds <= nominal,
                    "attempt \(attempt): \(milliseconds) ms outside [\(lower), \(nominal)]"
                )
            }
            let low = Double(samples.min()!)
            let high = Double(samples.max()!)
            let span = Double(nominal) * jitter
            #expect(
                low < Double(nominal) - 0.9 * span,
                "attempt \(attempt): the jitter reaches near the bottom (min \(low))"
            )
            #expect(
                high > Double(nominal) - 0.1 * span,
                "attempt \(attempt): the jitter reaches near the top (max \(high))"
            )
            #expect(Set(samples).count > 100, "attempt \(attempt): delays are spread, not constant")
        }
    }

    @Test("the same seed gives the same delays; the default policy stays in range")
    func reproducible() {
        let policy = RetryPolicy.default
        #expect(policy.base == .seconds(5))
        #expect(policy.maximum == .seconds(600))
        #expect(policy.jitter == 0.5)
        var first = SplitMix64(seed: 42)
        var second = SplitMix64(seed: 42)
        let a = (1...20).map { policy.delay(afterAttempt: $0, using: &first) }
        let b = (1...20).map { policy.delay(afterAttempt: $0, using: &second) }
        #expect(a == b)
        for attempt in 1...10 {
            let delay = policy.delay(afterAttempt: attempt)
            let nominal = Duration.milliseconds(Self.nominal(attempt))
            #expect(delay <= nominal && delay >= nominal / 2 - .milliseconds(1), "attempt \(attempt): \(delay)")
        }
    }

    @Test("Duration.seconds")
    func durationSeconds() {
        #expect(Duration.seconds(5).seconds == 5)
        #expect(Duration.milliseconds(1_500).seconds == 1.5)
        #expect(Duration.zero.seconds == 0)
    }
}
