import Foundation

/// When a failed delivery is tried again (docs/spec.md §6): about 5 s, 30 s, 2 min, 10 min, 30 min,
/// 1 h, then every 2 h, until 24 h after the event; ±10 % jitter. A `Retry-After` from the
/// receiver is honoured within 1 s…2 h, never undercut (jitter only adds to it). `scale`
/// shrinks every duration (tests).
public struct DeliverySchedule: Sendable, Hashable {
    public static let delays: [Duration] = [
        .seconds(5), .seconds(30), .seconds(120), .seconds(600), .seconds(1800), .seconds(3600),
    ]
    public static let steady: Duration = .seconds(7200)
    public static let giveUpAfter: Duration = .seconds(24 * 3600)

    public var scale: Double
    public var jitter: Double

    public init(scale: Double = 1, jitter: Double = 0.1) {
        precondition(scale > 0 && (0..<1).contains(jitter))
        self.scale = scale
        self.jitter = jitter
    }

    /// The wait after attempt `attempt` (1-based) failed, or `nil` when the event is `failed`
    /// (the next attempt would come more than 24 h after the event).
    public func delay<Generator: RandomNumberGenerator>(
        afterAttempt attempt: Int,
        eventAge: Duration,
        retryAfter: Duration?,
        using generator: inout Generator
    ) -> Duration? {
        var base = attempt >= 1 && attempt <= Self.delays.count ? Self.delays[attempt - 1] : Self.steady
        // A receiver's Retry-After is a minimum: jitter may only add to it.
        if let retryAfter { base = min(max(retryAfter, .seconds(1)), .seconds(7200)) }
        let factor = scale * (1 + jitter * Double.random(in: (retryAfter == nil ? -1 : 0)...1, using: &generator))
        let delay = Duration.milliseconds(Int64(Double(base.milliseconds) * factor))
        let limit = Duration.milliseconds(Int64(Double(Self.giveUpAfter.milliseconds) * scale))
        return eventAge + delay > limit ? nil : delay
    }

    public func delay(afterAttempt attempt: Int, eventAge: Duration, retryAfter: Duration?) -> Duration? {
        var generator = SystemRandomNumberGenerator()
        return delay(afterAttempt: attempt, eventAge: eventAge, retryAfter: retryAfter, using: &generator)
    }
}
