import Foundation
import Logging
import PostgresNIO
import Queue
import QueueMigrations

// The schema: migrations/postgres/*.sql under an advisory lock.
extension PostgresJobStore {
    // MARK: Schema

    /// Applies the migrations not applied yet, in one transaction under an advisory lock, so
    /// workers starting together never race. A database migrated by a newer jobctl is refused.
    public func migrate() async throws {
        try await transaction { connection in
            try await connection.query("SELECT pg_advisory_xact_lock(7261829301)", logger: self.logger)
            try await connection.query("CREATE SCHEMA IF NOT EXISTS jobctl", logger: self.logger)
            try await connection.query(
                "CREATE TABLE IF NOT EXISTS jobctl.schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: self.logger
            )
            var applied: Set<String> = []
            for try await name in try await connection.query(
                "SELECT name FROM jobctl.schema_migrations",
                logger: self.logger
            ).decode(String.self) {
                applied.insert(name)
            }
            if let unknown = applied.subtracting(Migrations.postgres.map(\.name)).sorted().first {
                throw JobStoreError(
                    .databaseUnavailable,
                    "the job database \(self.location) has migration \(unknown), from a newer jobctl; upgrade jobctl"
                )
            }
            for migration in Migrations.postgres where !applied.contains(migration.name) {
                // One statement per query (the extended protocol takes one); the files hold no
                // functions or quoted semicolons.
                for statement in Self.statements(in: migration.sql) {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: self.logger)
                }
                try await connection.query(
                    "INSERT INTO jobctl.schema_migrations (name, applied_at) VALUES (\(migration.name), \(Date().milliseconds))",
                    logger: self.logger
                )
            }
        }
    }

    /// The statements of a migration file: `--` comments dropped, split at `;` ending a line.
    static func statements(in sql: String) -> [String] {
        let lines = sql.split(separator: "\n", omittingEmptySubsequences: false).map { line -> Substring in
            guard let comment = line.range(of: "--") else { return line }
            return line[..<comment.lowerBound]
        }
        return lines.joined(separator: "\n")
            .components(separatedBy: ";\n")
            .map {
                $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(
                    in: CharacterSet(charactersIn: ";")
                )
            }
            .filter { !$0.isEmpty }
    }
}
