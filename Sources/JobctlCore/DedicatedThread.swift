import Foundation

/// Runs long blocking work (an export, FFmpeg opening a remote input, an upload of any size) on
/// a thread of its own, never on the Swift concurrency pool (docs/ffmpeg.md, "Threading"). The
/// one bridge from async code to such work; short blocking calls (a webhook POST) go to a
/// bounded `NIOThreadPool` instead.
public func onDedicatedThread<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) async throws -> T
{
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread { continuation.resume(with: Result { try body() }) }
        thread.name = name
        thread.start()
    }
}
