import Foundation

/// Runs blocking work (a libcurl request, FFmpeg opening a file) on a thread of its own, never
/// on the Swift concurrency pool (docs/ffmpeg.md, "Threading").
public func onDedicatedThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.name = name
        thread.start()
    }
}
