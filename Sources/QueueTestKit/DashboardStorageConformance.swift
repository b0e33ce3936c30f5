import Foundation
import Queue
import Testing

/// The conformance suite of what the dashboard keeps beside the queue (`DashboardStorage`):
/// sessions, the audit trail, the servers' shared secrets, the fleet's minutes and the search
/// index. Run against every store, as `JobStoreConformance` is:
///
/// ```swift
/// @Test(arguments: DashboardStorageConformance.Check.allCases)
/// func dashboard(_ check: DashboardStorageConformance.Check) async throws {
///     try await check.run { clock in
///         try (0..<4).map { _ in try SQLiteJobStore(path: path, clock: clock.now) }
///     }
/// }
/// ```
///
/// The storage lives in the job database (its minutes and its search read the jobs), so the
/// factory opens whole databases; the checks use the queue only to make jobs to look at.
public enum DashboardStorageConformance {
    /// Opens handles on ONE fresh, empty database, every one reading the time from `clock`.
    public typealias StoreFactory = @Sendable (_ clock: TestClock) async throws -> [any JobDatabase]

    /// One behaviour of the dashboard's storage, checked on its own fresh database.
    public enum Check: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Dashboard sessions: created, read before and at expiry on another handle, swept when
        /// expired, ended once.
        case dashboardSessions
        /// The dashboard's audit trail: newest first, of one job or all, limited.
        case auditTrail
        /// The fleet page's minutes: counts, wait and run percentiles and the queue recorded
        /// from the jobs, replaced when recorded again, dropped after the retention.
        case fleetMinutes
        /// A secret the servers share: made once, whoever asks first, the same on every handle.
        case serverSecrets
        /// The text search's index, brought up to date in steps: every listing condition
        /// answers as it does with nothing indexed.
        case searchIndex

        public var description: String { rawValue }

        /// Runs this check on a fresh database from `factory`.
        public func run(_ factory: StoreFactory) async throws {
            let harness = try await DashboardHarness.make(factory)
            switch self {
            case .dashboardSessions: try await DashboardChecks.dashboardSessions(harness)
            case .auditTrail: try await DashboardChecks.auditTrail(harness)
            case .fleetMinutes: try await DashboardChecks.fleetMinutes(harness)
            case .serverSecrets: try await DashboardChecks.serverSecrets(harness)
            case .searchIndex: try await Checks.listConditions(harness.queue, indexing: harness.stores[0])
            }
        }
    }
}

/// The checks of `DashboardStorageConformance.Check`, one function each.
enum DashboardChecks {
    static let workerA = Harness.workerA
    static let finalError = Checks.finalError
}

/// The handles on one database as the dashboard sees them, and the queue's harness on the same
/// handles (to submit and claim the jobs a check looks at).
struct DashboardHarness: Sendable {
    let queue: Harness
    let stores: [any JobDatabase]

    static func make(_ factory: DashboardStorageConformance.StoreFactory) async throws -> DashboardHarness {
        let clock = TestClock()
        let stores = try await factory(clock)
        return DashboardHarness(queue: try await Harness.make(clock: clock, stores: stores), stores: stores)
    }

    var clock: TestClock { queue.clock }
    var store: any JobStore { queue.store }
    func handle(_ index: Int) -> any JobStore { queue.handle(index) }

    @discardableResult
    func submit(_ name: String, maxAttempts: Int = 3, on index: Int = 0) async throws -> Job {
        try await queue.submit(name, maxAttempts: maxAttempts, on: index)
    }
}
