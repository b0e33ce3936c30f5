import Foundation
import Synchronization

/// A set of OS threads that run one export's stages, joined together.
///
/// FFmpeg calls block for milliseconds to seconds, so they run on their own threads, never on
/// the Swift concurrency pool (docs/ffmpeg.md, "Threading").
final class ThreadGroup: Sendable {
    private let group = DispatchGroup()

    /// Starts `body` on a new thread named `name`.
    func spawn(_ name: String, _ body: @escaping @Sendable () -> Void) {
        group.enter()
        let thread = Thread { [group] in
            body()
            group.leave()
        }
        thread.name = name
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Blocks until every spawned thread has returned.
    func join() {
        group.wait()
    }
}
