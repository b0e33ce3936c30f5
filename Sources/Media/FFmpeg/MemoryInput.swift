import CFFmpeg
import Foundation

/// An `AVIOContext` over bytes already read and checked (a DASH manifest): FFmpeg parses
/// exactly what jobctl checked, not what the file holds a moment later.
///
/// On its first read it also narrows the reading context's demuxer whitelist to `narrowed`:
/// FFmpeg's check of the whitelist is done by then, and the demuxers the DASH reader creates
/// for its segments copy the narrowed one (so a segment cannot be read as another manifest).
final class MemoryInput {
    private final class Cursor {
        let bytes: [UInt8]
        var position = 0
        var narrowed: String?
        var context: UnsafeMutablePointer<AVFormatContext>?

        init(_ bytes: [UInt8], narrowed: String?) {
            self.bytes = bytes
            self.narrowed = narrowed
        }
    }

    let io: UnsafeMutablePointer<AVIOContext>
    private let cursor: Cursor

    init(_ data: Data, narrowingTo narrowed: String?) {
        cursor = Cursor([UInt8](data), narrowed: narrowed)
        let size = 4096
        guard let buffer = av_malloc(size)?.assumingMemoryBound(to: UInt8.self),
            let io = avio_alloc_context(
                buffer,
                Int32(size),
                0,
                Unmanaged.passUnretained(cursor).toOpaque(),
                { opaque, target, capacity in
                    guard let opaque, let target else { return AVErr.eof }
                    let cursor = Unmanaged<Cursor>.fromOpaque(opaque).takeUnretainedValue()
                    if let narrowed = cursor.narrowed, let context = cursor.context {
                        av_free(context.pointee.format_whitelist)
                        context.pointee.format_whitelist = av_strdup(narrowed)
                        cursor.narrowed = nil
                    }
                    let count = min(Int(capacity), cursor.bytes.count - cursor.position)
                    guard count > 0 else { return AVErr.eof }
                    cursor.bytes.withUnsafeBufferPointer {
                        target.update(from: $0.baseAddress! + cursor.position, count: count)
                    }
                    cursor.position += count
                    return Int32(count)
                },
                nil,
                nil
            )
        else { fatalError("avio_alloc_context: out of memory") }
        self.io = io
    }

    /// Gives `context` the bytes as its input (before `avformat_open_input`).
    func attach(to context: UnsafeMutablePointer<AVFormatContext>) {
        cursor.context = context
        context.pointee.pb = io
        context.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
    }

    deinit {
        withUnsafeMutablePointer(to: &io.pointee.buffer) { av_freep($0) }
        var freeing: UnsafeMutablePointer<AVIOContext>? = io
        avio_context_free(&freeing)
    }
}
