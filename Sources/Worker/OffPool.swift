import Foundation

/// Runs blocking work (FFmpeg opening a file, reading a header over HTTP) on a thread of its
/// own, never on the Swift concurrency pool (docs/ffmpeg.md, "Threading").
func onDedicatedThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.name = name
        thread.start()
    }
}
