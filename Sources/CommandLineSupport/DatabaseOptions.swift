import ArgumentParser
import Foundation
import JobctlCore
import Queue
import QueuePostgres
import QueueSQLite

/// Where the job table is: `--db` or `JOBCTL_DB` (docs/spec.md §2).
package struct DatabaseOptions: ParsableArguments {
    /// `jobctl worker --concurrency`'s range (`jobctl-bench` starts workers with it).
    package static let workerConcurrency = 1...64

    package init() {}

    @Option(
        name: .customLong("db"),
        help: ArgumentHelp(
            "The job database: a SQLite file (PATH or sqlite:PATH; default jobs.sqlite here), or postgres://user:pass@host:port/db. Env: JOBCTL_DB.",
            valueName: "url"
        )
    )
    package var database: String?

    /// The location in effect: the flag, else the environment, else `jobs.sqlite`.
    package var location: String {
        database ?? ProcessInfo.processInfo.environment["JOBCTL_DB"].flatMap { $0.isEmpty ? nil : $0 } ?? "jobs.sqlite"
    }

    /// Opens (and migrates) the store, runs `body` with it, and closes it. A PostgreSQL
    /// store's connection pool runs meanwhile.
    /// - Parameter failFast: while PostgreSQL is known down, an operation fails after a second
    ///   instead of waiting 15 s for a connection (`serve`: a 503 at once).
    package func withStore<T>(failFast: Bool = false, _ body: (any JobDatabase) async throws -> T) async throws -> T {
        let location = self.location
        if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
            let store = try PostgresJobStore(url: location, knownDownGrace: failFast ? .seconds(1) : nil)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                try await store.migrate()
                return try await body(store)
            }
        }
        let path = location.hasPrefix("sqlite:") ? String(location.dropFirst("sqlite:".count)) : location
        guard !path.isEmpty else { throw CommandFailure.usage("--db sqlite: needs a file path") }
        return try await body(try SQLiteJobStore(path: path))
    }
}

/// `30s`, `10m`, `1h`, `1500ms`, `90` (seconds).
package struct DurationArgument: ExpressibleByArgument, Sendable {
    package var duration: Duration

    package init(_ duration: Duration) { self.duration = duration }

    package init?(argument: String) {
        guard let duration = parseDuration(argument) else { return nil }
        self.duration = duration
    }

    package var defaultValueDescription: String { "\(duration)" }
}
