/// When a failed attempt runs again: exponential backoff with jitter, capped.
///
/// Attempt n (1-based) that failed retryably waits `base · 2^(n-1)`, capped at `maximum`, then
/// scaled by a random factor in `[1 - jitter, 1]` so that jobs failing together do not retry
/// together.
public struct RetryPolicy: Sendable, Hashable {
    public var base: Duration
    public var maximum: Duration
    /// 0…1: how much of the delay is randomised.
    public var jitter: Double

    public init(base: Duration = .seconds(5), maximum: Duration = .seconds(600), jitter: Double = 0.5) {
        precondition(base > .zero && maximum >= base && (0...1).contains(jitter))
        self.base = base
        self.maximum = maximum
        self.jitter = jitter
    }

    public static let `default` = RetryPolicy()

    /// The delay before retrying after `attempt` failed.
    public func delay<Generator: RandomNumberGenerator>(
        afterAttempt attempt: Int,
        using generator: inout Generator
    ) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let seconds = min(base.seconds * Double(1 << exponent), maximum.seconds)
        let factor = 1 - jitter * Double.random(in: 0...1, using: &generator)
        return .milliseconds(Int64(seconds * factor * 1000))
    }

    public func delay(afterAttempt attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, using: &generator)
    }
}

extension Duration {
    /// Seconds as a floating-point number.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
