import Foundation
import GRDB
import Queue
import QueueMigrations

// The schema: migrations/sqlite/*.sql, one GRDB `registerMigration` each, applied by GRDB's
// `DatabaseMigrator` (its `grdb_migrations` table records what ran).
extension SQLiteJobStore {
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        for migration in Migrations.sqlite {
            migrator.registerMigration(migration.name) { db in try db.execute(sql: migration.sql) }
        }
        return migrator
    }()

    public func migrate() async throws {
        try SQLiteJobStore.migrate(pool, path: path)
    }

    /// Applies the migrations not applied yet, each in its own `IMMEDIATE` transaction. A
    /// database migrated by a newer jobctl is refused (`hasBeenSuperseded`). Processes starting
    /// together may race for the same migration: the loser's transaction fails and rolls back,
    /// and it finds the migration applied when it looks again. It tries again for as long as
    /// others make progress (eight processes on a new file can each lose a race per migration,
    /// more than a fixed number of tries allowed), and gives up after 5 tries in a row in which
    /// nothing was applied by anyone.
    static func migrate(_ pool: DatabasePool, path: String) throws {
        do {
            try pool.write(adoptLegacyHistory)
            if try pool.read(migrator.hasBeenSuperseded) {
                throw JobStoreError(
                    .databaseUnavailable,
                    "the job database \(path) was migrated by a newer jobctl; upgrade jobctl"
                )
            }
            var stalled = 0
            var applied = try pool.read(migrator.appliedIdentifiers).count
            while true {
                do {
                    try migrator.migrate(pool)
                    return
                } catch {
                    if try pool.read(migrator.hasCompletedMigrations) { return }
                    let now = try pool.read(migrator.appliedIdentifiers).count
                    stalled = now > applied ? 0 : stalled + 1
                    applied = now
                    if stalled == 5 { throw error }
                }
            }
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw storeError(error, path: path, doing: "cannot migrate the job database \(path)")
        }
    }

    /// Databases made before jobctl used GRDB's migrator record their migrations in
    /// `schema_migrations`: copy them to `grdb_migrations` once (the old table stays, unread).
    private static func adoptLegacyHistory(_ db: Database) throws {
        guard try db.tableExists("schema_migrations") else { return }
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT OR IGNORE INTO grdb_migrations (identifier) SELECT name FROM schema_migrations;
                """
        )
    }
}
