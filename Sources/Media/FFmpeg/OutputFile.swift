import CFFmpeg
import Foundation
import Synchronization

/// A muxer (`AVFormatContext` for output) writing one file.
///
/// Every track's thread writes packets through `write(_:)`; the muxer is not thread-safe, so
/// the interleaving write happens under a lock. `isOpen` and the input order live in the lock:
/// `abort()` comes from another thread.
final class OutputFile {
    let context: UnsafeMutablePointer<AVFormatContext>
    let path: String
    private let state = Mutex(State())

    private struct State: Sendable {
        var isOpen = false
        /// Set by `orderByInput(streams:)`: packets wait here for their turn (`InputOrder`).
        var order: InputOrder<Packet>?
    }
    /// The payload bytes handed to the muxer so far: what its files will hold, near enough, for
    /// a muxer that writes files of its own (whose sizes `write` cannot tell).
    let packetBytes = Atomic<Int64>(0)

    init(path: String, formatName: String) throws {
        var allocated: UnsafeMutablePointer<AVFormatContext>? = nil
        try check(
            avformat_alloc_output_context2(&allocated, nil, formatName, path),
            "avformat_alloc_output_context2(\(formatName))"
        )
        guard let allocated else { throw FFError(code: AVErr.invalidData, operation: "avformat_alloc_output_context2") }
        context = allocated
        self.path = path
    }

    deinit {
        if state.withLock({ $0.isOpen }) { avio_closep(&context.pointee.pb) }
        avformat_free_context(context)
    }

    var needsGlobalHeader: Bool { context.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER != 0 }

    func addStream() throws -> UnsafeMutablePointer<AVStream> {
        guard let stream = avformat_new_stream(context, nil) else {
            throw FFError(code: cff_averror(ENOMEM), operation: "avformat_new_stream")
        }
        return stream
    }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> { context.pointee.streams[index]! }

    /// Opens the file and writes the header. Stream time bases may change here (docs/ffmpeg.md #18).
    /// - Parameter location: what FFmpeg opens, and reopens to move the index to the front
    ///   (`+faststart`); by default `path`.
    func open(at location: String? = nil, options: [String: String]) throws {
        let location = location ?? path
        if location != path {
            av_freep(&context.pointee.url)
            context.pointee.url = av_strdup(location)
        }
        var dictionary: OpaquePointer? = nil
        for (key, value) in options { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        // The header is written under the lock too: an `abort()` from another thread (a
        // SIGTERM during start-up) closed `pb` under a running `avformat_write_header` and
        // crashed the process (seen once in CI: signal 11 in libavformat).
        try state.withLock { state in
            // A muxer that writes files of its own (hls: segments and playlists) opens them itself.
            if context.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
                try check(avio_open(&context.pointee.pb, location, AVIO_FLAG_WRITE), "avio_open(\(path))")
            }
            state.isOpen = true
            try check(avformat_write_header(context, &dictionary), "avformat_write_header")
        }
    }

    /// Hands the streams' packets to the muxer in the input's order rather than as their threads
    /// come (`InputOrder`): `write(_:sequence:)` then says which input packet released each one,
    /// `advance` and `finish(stream:)` what a stream will not bring. Before `open`.
    func orderByInput(streams: Int) {
        state.withLock { $0.order = InputOrder(streams: streams) }
    }

    /// Writes a packet (taking over its payload), interleaving with the other tracks, and
    /// returns the file's size so far. After `abort()` (a cancel from another thread) it throws
    /// `AVERROR_EXIT` instead of touching the closed file. In the input's order, the packet waits
    /// for its turn and what is due is written (an error is the first of those writes').
    @discardableResult
    func write(_ packet: UnsafeMutablePointer<AVPacket>, sequence: Int64 = 0) throws -> Int64 {
        try state.withLock { state in
            guard state.isOpen else {
                av_packet_unref(packet)
                throw FFError(code: AVErr.exit, operation: "av_interleaved_write_frame after abort")
            }
            packetBytes.add(Int64(packet.pointee.size), ordering: .relaxed)
            guard state.order != nil else { return try mux(packet) }
            let stream = Int(packet.pointee.stream_index)
            state.order!.add(Packet.moving(from: packet), stream: stream, sequence: sequence)
            return try writeDue(&state)
        }
    }

    /// In the input's order: `stream`'s packets still to come have at least `sequence`.
    func advance(stream: Int, to sequence: Int64) throws {
        try state.withLock { state in
            guard state.isOpen, state.order != nil else { return }
            state.order!.advance(stream, to: sequence)
            try writeDue(&state)
        }
    }

    /// In the input's order: `stream` will bring nothing more.
    func finish(stream: Int) throws {
        try state.withLock { state in
            guard state.isOpen, state.order != nil else { return }
            state.order!.finish(stream)
            try writeDue(&state)
        }
    }

    @discardableResult
    private func writeDue(_ state: inout State) throws -> Int64 {
        var size: Int64 = 0
        while let due = state.order!.next() { size = try mux(due.pointer) }
        return size
    }

    private func mux(_ packet: UnsafeMutablePointer<AVPacket>) throws -> Int64 {
        try check(av_interleaved_write_frame(context, packet), "av_interleaved_write_frame")
        return context.pointee.pb.map { avio_tell($0) } ?? 0
    }

    /// Flushes the interleaving queue, writes the trailer (and, for `+faststart`, moves the index
    /// to the front), and closes the file.
    func finish() throws {
        try state.withLock { state in
            guard state.isOpen else { throw FFError(code: AVErr.exit, operation: "av_write_trailer after abort") }
            for packet in state.order?.drain() ?? [] { try mux(packet.pointer) }
            try check(av_write_trailer(context), "av_write_trailer")
            state.isOpen = false
            if context.pointee.pb != nil { try check(avio_closep(&context.pointee.pb), "avio_closep") }
        }
    }

    /// Closes the file without a trailer (it is about to be deleted).
    func abort() {
        state.withLock { state in
            if state.isOpen {
                avio_closep(&context.pointee.pb)
                state.isOpen = false
            }
            state.order = nil
        }
    }
}
