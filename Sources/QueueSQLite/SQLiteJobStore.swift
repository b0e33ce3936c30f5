import Foundation
import GRDB
import JobctlCore
import Queue
import QueueMigrations
import Synchronization

/// The job table in a SQLite file, shared by any number of processes on one host.
///
/// WAL mode, a busy timeout (writers queue up instead of failing with "database is locked"),
/// `synchronous = FULL` (a submitted job survives a power cut). Every write is one `IMMEDIATE`
/// transaction; a claim is one `UPDATE … RETURNING`. Every write about a running job checks
/// its lease token, so a worker that lost its lease changes nothing (fencing).
public final class SQLiteJobStore: JobStore, JobStoreChangeNotifying, WebhookOutbox {
    let pool: DatabasePool
    let commits: GroupCommit
    let clock: @Sendable () -> Date
    public let path: String

    /// Opens (creating if needed) and migrates the database at `path`.
    /// - Parameter clock: the store's notion of now (tests move it to expire leases).
    public init(path: String, busyTimeout: TimeInterval = 60, clock: @escaping @Sendable () -> Date = { Date() }) throws
    {
        self.path = path
        self.clock = clock
        var configuration = Configuration()
        // SQLite's own busy handler sleeps 1, 2, 5, 10… ms: with several worker processes that
        // is most of the time spent. Wait in short steps instead, up to `busyTimeout`.
        let maximumTries = Int(busyTimeout * 1000 / 0.25)
        configuration.busyMode = .callback { tries in
            guard tries < maximumTries else { return false }
            usleep(tries < 20 ? 50 : 250)
            return true
        }
        configuration.label = "jobctl"
        try SQLiteJobStore.requireSingleName(path)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        pool = try SQLiteJobStore.open(path, configuration, busyTimeout: busyTimeout)
        commits = GroupCommit(pool: pool, turns: HostWriteLock(databasePath: path))
        try SQLiteJobStore.migrate(pool, path: path)
    }

    var now: Int64 { clock().milliseconds }

    /// Opens the pool. Switching a new file to WAL takes a lock SQLite does not wait for with
    /// the busy handler: several processes opening a new database at once (a systemd unit
    /// starting eight workers) saw "database is locked" now and then. Those tries are repeated
    /// for up to `busyTimeout`.
    static func open(_ path: String, _ configuration: Configuration, busyTimeout: TimeInterval) throws -> DatabasePool {
        let deadline = Date().addingTimeInterval(busyTimeout)
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration)
            } catch let error as DatabaseError
                where [.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode.primaryResultCode) && Date() < deadline
            {
                usleep(UInt32.random(in: 1_000...10_000))
            } catch {
                throw SQLiteJobStore.storeError(error, path: path, doing: "cannot open the job database \(path)")
            }
        }
    }

    // MARK: Notifications

    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watcher = ChangeWatcher(databasePath: path) { continuation.yield() }
        if watcher == nil { continuation.finish() }
        continuation.onTermination = { _ in watcher?.stop() }
        return stream
    }

    /// inotify cannot tell what a commit changed: every change is `.any`, and the watcher
    /// reads events only while anything is wanted.
    public func changes(wanted: @escaping @Sendable () -> StoreChange) -> ChangeFeed {
        let watching = Mutex<ChangeWatcher?>(nil)
        let feed = ChangeFeed { watching.withLock { $0?.stop() } }
        let watcher = ChangeWatcher(
            databasePath: path,
            listening: { !wanted().isEmpty },
            onChange: { feed.send(.any) }
        )
        if watcher == nil { feed.finish() }
        watching.withLock { $0 = watcher }
        return feed
    }

    // MARK: Plumbing

    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await commits.write(body)
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw SQLiteJobStore.storeError(error, path: path, doing: "the job database \(path) failed")
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch let error as JobStoreError {
            throw error
        } catch {
            throw SQLiteJobStore.storeError(error, path: path, doing: "the job database \(path) failed")
        }
    }

    /// A database error as the store reports it: a damaged file is `corrupt` (no retry can
    /// help), anything else `unavailable`.
    static func storeError(_ error: any Error, path: String, doing what: String) -> JobStoreError {
        if let error = error as? DatabaseError,
            [.SQLITE_CORRUPT, .SQLITE_NOTADB].contains(error.resultCode.primaryResultCode)
        {
            return JobStoreError(
                .databaseCorrupt,
                "the job database \(path) is damaged (\(describe(error))): stop every worker using it, keep a copy, and rebuild it with `sqlite3 \(path) .dump | sqlite3 NEW.sqlite` (docs/operations.md, \"A damaged SQLite database\")",
                cause: error
            )
        }
        if let error = error as? DatabaseError, error.resultCode.primaryResultCode == .SQLITE_CANTOPEN {
            let directory = PathText.directory(of: path)
            var isDirectory: ObjCBool = false
            let reason =
                !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) || !isDirectory.boolValue
                ? "the directory \(directory) does not exist"
                : FileManager.default.isWritableFile(atPath: directory)
                    ? describe(error)
                    : "\(directory) is not writable by this user (SQLite needs to create its -wal and -shm files there)"
            return JobStoreError(.databaseUnavailable, "\(what): \(reason)", cause: error)
        }
        return JobStoreError(.databaseUnavailable, "\(what): \(describe(error))", cause: error)
    }

    /// SQLite keeps its write-ahead log beside the *name* a database is opened by: two hard
    /// links are two logs for one file, and writes through one are lost to the other (20 of 40
    /// jobs vanished in a test with two workers). Refuse a file with more than one link.
    static func requireSingleName(_ path: String) throws {
        var info = stat()
        guard stat(path, &info) == 0, info.st_nlink > 1 else { return }
        throw JobStoreError(
            .databaseUnavailable,
            "the job database \(path) has \(info.st_nlink) hard links: SQLite must be reached through one path on one host (its write-ahead log follows the name); remove the other links, or use PostgreSQL to share a queue between hosts"
        )
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? DatabaseError { return error.message ?? "\(error.resultCode)" }
        return "\(error)"
    }
}

extension Database {
    /// Executes `sql` through the statement cache: the hot statements are parsed once.
    func run(sql: String, arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}
