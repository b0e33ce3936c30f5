import Foundation

/// Times as the stores keep them (milliseconds since 1970, whole milliseconds of a duration):
/// one definition for SQLite, PostgreSQL and the HTTP sender.
extension Date {
    public var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
    public init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}

extension Duration {
    /// Whole milliseconds, rounded toward zero.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
