import Foundation
import Glibc
import JobctlCore
import Synchronization

/// Makes the processes that write one SQLite database on this host take turns in the kernel
/// instead of in SQLite's busy handler.
///
/// SQLite has no blocking write lock: a process that finds it taken sleeps and tries again, so
/// with 4 busy worker processes on 2 cores the lock often sat free while every waiter slept,
/// or went back to the process that had just let it go. An exclusive `flock` on a file beside
/// the database (`PATH-lock`), taken around each write transaction, queues the waiters in the
/// kernel, which wakes one of them the moment the holder lets go; meanwhile each waiter's
/// group commit gathers more writes (4 processes: 9.0k → 10–11k jobs/s, docs/benchmarks.md).
///
/// It only orders writers that already exclude each other: SQLite's own locks still guard
/// the data, so a process without it (the `sqlite3` shell, an old jobctl) stays correct. A
/// holder that is killed loses it at once (the kernel drops a dead process's locks). A holder
/// that is frozen (SIGSTOP, a stalled disk) is waited for `patience`, then the write goes on
/// without the turn and SQLite's busy handler waits for it as before, up to its own timeout,
/// which then fails the write with a reason instead of hanging the process.
///
/// `flock` cannot time out, so a thread of its own blocks in it and hands the turn over.
final class HostWriteLock: Sendable {
    private enum Phase {
        /// Nobody wants or has the turn.
        case idle
        /// The locking thread is asked to take it.
        case requested
        /// Taken, for the writer who asked.
        case held
        /// The writer stopped waiting; the locking thread lets the turn go as soon as it gets it.
        case abandoned
    }

    private final class Shared: Sendable {
        let descriptor: Int32
        let phase = Mutex(Phase.idle)
        let requests = DispatchSemaphore(value: 0)
        let granted = DispatchSemaphore(value: 0)
        let stopped = AtomicFlag()

        init(descriptor: Int32) { self.descriptor = descriptor }

        func serve() {
            defer { close(descriptor) }
            while true {
                requests.wait()
                guard !stopped.isSet else { return }
                while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
                phase.withLock { phase in
                    if phase == .abandoned {
                        flock(descriptor, LOCK_UN)
                        phase = .idle
                    } else {
                        phase = .held
                        granted.signal()
                    }
                }
            }
        }
    }

    private let shared: Shared?
    private let patience: Duration

    /// Opens (creating it with the database's permissions) `databasePath + "-lock"`. When it
    /// cannot be opened, writes go on without turns, as before.
    init(databasePath: String, patience: Duration = .seconds(1)) {
        self.patience = patience
        var info = stat()
        let mode = stat(databasePath, &info) == 0 ? info.st_mode & 0o666 : 0o600
        let path = databasePath + "-lock"
        // A FIFO or a symbolic link put in its place is not followed or waited on.
        let flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
        var descriptor = open(path, O_RDWR | O_CREAT | O_EXCL | flags, mode)
        if descriptor >= 0 {
            fchmod(descriptor, mode)  // as SQLite does for -wal and -shm, whatever the umask
        } else if errno == EEXIST {
            descriptor = open(path, O_RDWR | flags)
            if descriptor < 0 && errno == EACCES { descriptor = open(path, O_RDONLY | flags) }
        }
        guard descriptor >= 0 else {
            shared = nil
            return
        }
        let shared = Shared(descriptor: descriptor)
        self.shared = shared
        let thread = Thread { shared.serve() }
        thread.name = "jobctl.sqlite.turns"
        thread.start()
    }

    deinit {
        guard let shared else { return }
        shared.stopped.set()
        shared.requests.signal()
    }

    /// Waits for this process's turn to write, up to `patience`; `true` when it has it (then
    /// `release()` must follow), `false` to write without it.
    func acquire() -> Bool {
        guard let shared else { return false }
        let asked = shared.phase.withLock { phase -> Bool in
            // Still blocked for a writer who gave up: the holder is stuck; do not queue behind it.
            guard phase == .idle else { return false }
            phase = .requested
            return true
        }
        guard asked else { return false }
        shared.requests.signal()
        let nanoseconds = patience.components.seconds * 1_000_000_000 + patience.components.attoseconds / 1_000_000_000
        if shared.granted.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success { return true }
        return shared.phase.withLock { phase in
            if phase == .held {
                // Granted just as the wait ended: take the signal that came with it.
                shared.granted.wait()
                return true
            }
            phase = .abandoned
            return false
        }
    }

    func release() {
        guard let shared else { return }
        shared.phase.withLock { phase in
            flock(shared.descriptor, LOCK_UN)
            phase = .idle
        }
    }
}
