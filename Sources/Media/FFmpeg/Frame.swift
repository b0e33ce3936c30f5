import CFFmpeg

/// An owned `AVFrame` (its own reference to the buffers). Moved, never shared. (Sendable on that
/// invariant: one owner at a time.)
final class Frame: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVFrame>

    init() {
        guard let frame = av_frame_alloc() else { fatalError("av_frame_alloc: out of memory") }
        pointer = frame
    }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&frame)
    }

    /// A new frame referencing `source`'s buffers (no copy).
    static func referencing(_ source: UnsafeMutablePointer<AVFrame>) throws -> Frame {
        let frame = Frame()
        try check(av_frame_ref(frame.pointer, source), "av_frame_ref")
        return frame
    }

    /// A video frame with freshly allocated buffers.
    static func video(width: Int32, height: Int32, format: AVPixelFormat) throws -> Frame {
        let frame = Frame()
        frame.pointer.pointee.width = width
        frame.pointer.pointee.height = height
        frame.pointer.pointee.format = format.rawValue
        try check(av_frame_get_buffer(frame.pointer, 0), "av_frame_get_buffer")
        return frame
    }

    /// An audio frame with room for `samples` samples.
    static func audio(
        samples: Int32,
        format: AVSampleFormat,
        layout: UnsafePointer<AVChannelLayout>,
        sampleRate: Int32
    ) throws -> Frame {
        let frame = Frame()
        frame.pointer.pointee.nb_samples = samples
        frame.pointer.pointee.format = format.rawValue
        frame.pointer.pointee.sample_rate = sampleRate
        try check(av_channel_layout_copy(&frame.pointer.pointee.ch_layout, layout), "av_channel_layout_copy")
        try check(av_frame_get_buffer(frame.pointer, 0), "av_frame_get_buffer")
        return frame
    }

    var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }
    var width: Int32 { pointer.pointee.width }
    var height: Int32 { pointer.pointee.height }
    var sampleCount: Int32 {
        get { pointer.pointee.nb_samples }
        set { pointer.pointee.nb_samples = newValue }
    }

    /// The plane pointers of an audio frame, as `swr_convert` and the audio FIFO want them.
    func withPlanes<R>(_ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>) throws -> R) rethrows -> R {
        try body(pointer.pointee.extended_data)
    }
}
