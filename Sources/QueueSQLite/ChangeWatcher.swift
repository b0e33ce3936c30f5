import Foundation
import Glibc
import JobctlCore

#if !os(Linux)
#error("jobctl runs on Linux only: this file needs inotify")
#endif

/// Watches a SQLite database's directory with inotify and calls `onChange` whenever its
/// write-ahead log (or the file itself) is written: every commit, by any process, appends to
/// the `-wal` file. Runs on a thread of its own; `stop()` ends it within a second.
///
/// Every page any process writes is an event, so with several busy processes the watchers
/// themselves kept the machine busy (2 cores, 4 worker processes: half the queue's rate). It
/// reads events only while `listening` (a worker that is idle, or runs jobs that may be
/// cancelled), and pauses `pause` after each batch so that the kernel merges the next ones.
final class ChangeWatcher: Sendable {
    private let stopped = AtomicFlag()

    /// Starts watching; `nil` when inotify is unavailable (then workers just poll).
    init?(
        databasePath: String,
        listening: @escaping @Sendable () -> Bool = { true },
        onChange: @escaping @Sendable () -> Void
    ) {
        let url = URL(fileURLWithPath: databasePath).standardizedFileURL
        let directory = url.deletingLastPathComponent().path
        let names: Set<String> = [url.lastPathComponent, url.lastPathComponent + "-wal"]
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        guard inotify_add_watch(descriptor, directory, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO)) >= 0 else {
            close(descriptor)
            return nil
        }
        let thread = Thread { [stopped] in
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while !stopped.isSet {
                // Not wanted now (a busy worker): leave the events unread; the kernel merges them.
                guard listening() else {
                    usleep(ChangeWatcher.pause)
                    continue
                }
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, 1000) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { continue }
                if ChangeWatcher.mentions(names, in: buffer, count: count) { onChange() }
                usleep(ChangeWatcher.pause)  // identical unread events coalesce meanwhile
            }
        }
        thread.name = "jobctl.sqlite.watch"
        thread.start()
    }

    /// The pause after each batch of events (µs): what it adds to pickup latency at most.
    static let pause: useconds_t = 2000

    func stop() { stopped.set() }

    deinit { stop() }

    /// Whether any `struct inotify_event` in the buffer names one of `names`, or says the
    /// kernel's queue overflowed (events were lost while the watcher was not reading: anything
    /// may have changed). Each event is the fixed header (`wd`, `mask`, `cookie`, `len`)
    /// followed by `len` bytes of NUL-padded name.
    static func mentions(_ names: Set<String>, in buffer: [UInt8], count: Int) -> Bool {
        let header = MemoryLayout<inotify_event>.size
        let lengthOffset = MemoryLayout<inotify_event>.offset(of: \inotify_event.len)!
        let maskOffset = MemoryLayout<inotify_event>.offset(of: \inotify_event.mask)!
        return buffer.withUnsafeBytes { bytes in
            var offset = 0
            while offset + header <= count {
                let mask = bytes.loadUnaligned(fromByteOffset: offset + maskOffset, as: UInt32.self)
                if mask & UInt32(IN_Q_OVERFLOW) != 0 { return true }
                let length = Int(bytes.loadUnaligned(fromByteOffset: offset + lengthOffset, as: UInt32.self))
                let name = bytes[(offset + header)..<min(count, offset + header + length)].prefix { $0 != 0 }
                if names.contains(String(decoding: name, as: UTF8.self)) { return true }
                offset += header + length
            }
            return false
        }
    }
}
