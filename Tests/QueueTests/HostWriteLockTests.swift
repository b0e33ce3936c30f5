import Foundation
import Glibc
import MediaTestKit
import Queue
import Synchronization
import Testing

@testable import QueueSQLite

/// The turns the processes writing one SQLite database take (`PATH-lock`): real `flock`s,
/// held by another descriptor or by another process (util-linux's `flock`).
@Suite("HostWriteLock")
struct HostWriteLockTests {
    /// Whether anybody holds `path`'s lock now (tried with a descriptor of our own).
    static func isHeld(_ path: String) -> Bool {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return true }
        flock(descriptor, LOCK_UN)
        return false
    }

    /// Runs `body` on a thread of its own (`acquire()` blocks) and returns what it returned.
    static func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    @Test("a lock file that cannot be opened (a directory or a symbolic link in its place) leaves writes as they were")
    func unopenable() async throws {
        let directory = try TemporaryDirectory("unopenable")
        defer { directory.remove() }
        let blocked = directory.file("dir.sqlite")
        try FileManager.default.createDirectory(atPath: blocked + "-lock", withIntermediateDirectories: false)
        let linked = directory.file("link.sqlite")
        try FileManager.default.createSymbolicLink(
            atPath: linked + "-lock",
            withDestinationPath: directory.file("target")
        )
        for path in [blocked, linked] {
            let store = try SQLiteJobStore(path: path)
            _ = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/a.mp4", preset: "low"))
            #expect(try await store.jobs(status: nil, limit: 100).count == 1)
        }
        #expect(!FileManager.default.fileExists(atPath: directory.file("target")), "the symbolic link was followed")
    }

    @Test("the lock file gets the database's permissions, whatever the umask")
    func permissions() throws {
        let directory = try TemporaryDirectory("mode")
        defer { directory.remove() }
        let database = directory.file("jobs.sqlite")
        // 0o666 is more than a usual umask (022) lets open(2) give: only the fchmod gives it.
        _ = FileManager.default.createFile(atPath: database, contents: nil)
        chmod(database, 0o666)
        _ = HostWriteLock(databasePath: database)
        let mode = try FileManager.default.attributesOfItem(atPath: database + "-lock")[.posixPermissions] as? Int
        #expect(mode == 0o666)
    }
}

extension HostWriteLockTests {
    /// The tests of HostWriteLockTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("HostWriteLock: timing", .serialized)
    struct Timing {
        @Test("two writers of one database take turns: the second gets its turn the moment the first lets go")
        func turns() async throws {
            let directory = try TemporaryDirectory("turns")
            defer { directory.remove() }
            let database = directory.file("jobs.sqlite")
            _ = FileManager.default.createFile(atPath: database, contents: nil)
            let first = HostWriteLock(databasePath: database, patience: .seconds(20))
            let second = HostWriteLock(databasePath: database, patience: .seconds(20))
            #expect(first.acquire())
            let answered = Mutex<ContinuousClock.Instant?>(nil)
            let waiting = Task {
                await HostWriteLockTests.onThread {
                    let has = second.acquire()
                    answered.withLock { $0 = .now }
                    return has
                }
            }
            let held = await holds(for: .milliseconds(300)) { answered.withLock { $0 } == nil }
            #expect(held, "the second writer got a turn the first still held")
            let released = ContinuousClock.now
            first.release()
            #expect(await waiting.value, "the second writer gave up instead of taking its turn")
            let after = try #require(answered.withLock { $0 }) - released
            #expect(after < .seconds(5), "the turn took \(after) to pass on")
            second.release()
            #expect(!HostWriteLockTests.isHeld(database + "-lock"))
        }

        @Test(
            "a holder that never lets go (another process) is waited for only `patience`; writes go on without turns, and turns come back once it is killed"
        )
        func stuckHolder() async throws {
            let directory = try TemporaryDirectory("stuck")
            defer { directory.remove() }
            let database = directory.file("jobs.sqlite")
            let store = try SQLiteJobStore(path: database)
            _ = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/a.mp4", preset: "low"))
            // One process that takes the lock and sleeps holding it (exec: killing it lets go).
            let holder = try ChildProcess(
                "sh",
                ["-c", "exec 9<>\"$1\" && flock 9 && exec sleep 60", "sh", database + "-lock"]
            )
            defer { holder.signal(SIGKILL) }
            #expect(
                await eventually(within: .seconds(10)) { HostWriteLockTests.isHeld(database + "-lock") },
                "flock(1) did not take the lock"
            )

            // The store's patience is 1 s: the first write waits that long, the next ones not at all.
            let started = ContinuousClock.now
            for name in ["b", "c", "d"] {
                _ = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/\(name).mp4", preset: "low"))
            }
            let took = ContinuousClock.now - started
            #expect(took < .seconds(4), "three submits behind a stuck lock holder took \(took)")
            #expect(try await store.jobs(status: nil, limit: 100).count == 4)

            holder.signal(SIGKILL)
            _ = await holder.wait()
            let lock = HostWriteLock(databasePath: database, patience: .seconds(5))
            // The store's locking thread takes and lets go of the abandoned turn once it can.
            let has = await eventually(within: .seconds(20)) { await HostWriteLockTests.onThread { lock.acquire() } }
            #expect(has, "no turn after the holder was killed")
            lock.release()
            _ = try await store.submit(JobRequest(input: "/data/in.mov", output: "/out/e.mp4", preset: "low"))
        }
    }
}
