import Foundation
import Glibc
import Synchronization

/// Watches a SQLite database's directory with inotify and calls `onChange` whenever its
/// write-ahead log (or the file itself) is written: every commit, by any process, appends to
/// the `-wal` file. Runs on a thread of its own; `stop()` ends it within a second.
final class ChangeWatcher: Sendable {
    private final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    private let stopped = Flag()

    /// Starts watching; `nil` when inotify is unavailable (then workers just poll).
    init?(databasePath: String, onChange: @escaping @Sendable () -> Void) {
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
            while !stopped.value.load(ordering: .acquiring) {
                var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&waiting, 1, 1000) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { continue }
                if ChangeWatcher.mentions(names, in: buffer, count: count) { onChange() }
            }
        }
        thread.name = "jobctl.sqlite.watch"
        thread.start()
    }

    func stop() { stopped.value.store(true, ordering: .releasing) }

    deinit { stop() }

    /// Whether any `struct inotify_event` in the buffer names one of `names`.
    private static func mentions(_ names: Set<String>, in buffer: [UInt8], count: Int) -> Bool {
        var offset = 0
        while offset + 16 <= count {
            let length = Int(buffer[offset + 12]) | Int(buffer[offset + 13]) << 8 | Int(buffer[offset + 14]) << 16 | Int(buffer[offset + 15]) << 24
            let nameBytes = buffer[(offset + 16)..<min(count, offset + 16 + length)].prefix { $0 != 0 }
            if names.contains(String(decoding: nameBytes, as: UTF8.self)) { return true }
            offset += 16 + length
        }
        return false
    }
}
