import Foundation
import Synchronization

/// A clock that only moves when a test says so, shared by every store handle of a conformance
/// check: leases expire and retry times come by `advance(by:)`, never by waiting.
///
/// It has millisecond resolution, like the stores' columns, so that a time read back from a
/// store equals the clock's time exactly.
public final class TestClock: Sendable {
    private let state: Mutex<Date>

    /// 2026-01-01T00:00:00.123Z: a fraction of a second, so a store that drops milliseconds shows.
    public static let defaultStart = Date(timeIntervalSince1970: 1_767_225_600.123)

    public init(_ start: Date = TestClock.defaultStart) {
        state = Mutex(TestClock.rounded(start))
    }

    /// The current time.
    public var date: Date { state.withLock { $0 } }

    /// The current time in Unix milliseconds.
    public var milliseconds: Int64 { date.unixMilliseconds }

    /// The clock to hand to a store (`SQLiteJobStore(path:clock:)`).
    public var now: @Sendable () -> Date { { [self] in self.date } }

    /// Moves the clock forward (or back, with a negative duration), to the millisecond.
    public func advance(by duration: Duration) {
        state.withLock { date in
            date = Date(unixMilliseconds: date.unixMilliseconds + duration.wholeMilliseconds)
        }
    }

    private static func rounded(_ date: Date) -> Date { Date(unixMilliseconds: date.unixMilliseconds) }
}

extension Date {
    /// Unix milliseconds, rounded: how the stores keep times.
    var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    init(unixMilliseconds: Int64) { self.init(timeIntervalSince1970: Double(unixMilliseconds) / 1000) }
}

extension Duration {
    /// Whole milliseconds (sub-millisecond parts are dropped).
    var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
