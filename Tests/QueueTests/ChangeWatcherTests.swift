import Glibc
import Testing

@testable import QueueSQLite

/// Parsing inotify events: the database's files are changes, other names are not, and a queue
/// overflow (events lost while the watcher did not read) counts as a change.
@Suite("ChangeWatcher")
struct ChangeWatcherTests {
    /// One event as the kernel lays it out: the header, then the name padded to 16 bytes.
    static func event(mask: UInt32, name: String) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: MemoryLayout<inotify_event>.size)
        let padded = name.isEmpty ? 0 : (name.utf8.count / 16 + 1) * 16
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(
                of: mask,
                toByteOffset: MemoryLayout<inotify_event>.offset(of: \inotify_event.mask)!,
                as: UInt32.self
            )
            raw.storeBytes(
                of: UInt32(padded),
                toByteOffset: MemoryLayout<inotify_event>.offset(of: \inotify_event.len)!,
                as: UInt32.self
            )
        }
        var name = Array(name.utf8)
        name += [UInt8](repeating: 0, count: padded - name.count)
        return bytes + name
    }

    @Test func namesAndOverflow() {
        let names: Set<String> = ["jobs.sqlite", "jobs.sqlite-wal"]
        let other = Self.event(mask: UInt32(IN_MODIFY), name: "notes.txt")
        let wal = Self.event(mask: UInt32(IN_MODIFY), name: "jobs.sqlite-wal")
        let overflow = Self.event(mask: UInt32(IN_Q_OVERFLOW), name: "")
        #expect(!ChangeWatcher.mentions(names, in: other, count: other.count))
        #expect(ChangeWatcher.mentions(names, in: other + wal, count: other.count + wal.count))
        #expect(ChangeWatcher.mentions(names, in: other + overflow, count: other.count + overflow.count))
    }
}
