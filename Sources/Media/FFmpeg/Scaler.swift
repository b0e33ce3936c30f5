import CFFmpeg

/// Converts video frames to one size and pixel format (`SwsContext`), re-creating the context
/// if the source geometry changes mid-stream.
final class Scaler {
    let width: Int32
    let height: Int32
    let format: AVPixelFormat
    private var context: OpaquePointer?
    private var source: (width: Int32, height: Int32, format: Int32) = (0, 0, -1)
    /// Pictures this scaler converted into, kept to convert into again: each result is a new
    /// reference to one of them, and one whose every reference is gone (`av_frame_is_writable`)
    /// is used again, as the ffmpeg CLI's filters draw from buffer pools. Allocating and freeing
    /// a picture per frame and rendition left the heap fragmented (docs/benchmarks.md, "HLS ladder").
    private var pool: [Frame] = []
    static let poolSize = 4

    init(width: Int32, height: Int32, format: AVPixelFormat) {
        self.width = width
        self.height = height
        self.format = format
    }

    deinit { sws_freeContext(context) }

    /// Whether `frame` is already in the target size and format (no conversion needed).
    func isIdentity(for frame: UnsafePointer<AVFrame>) -> Bool {
        frame.pointee.width == width && frame.pointee.height == height && frame.pointee.format == format.rawValue
    }

    /// A new frame holding `frame` converted (bicubic, as the ffmpeg CLI's scale filter).
    func scale(_ frame: UnsafeMutablePointer<AVFrame>) throws -> Frame {
        let geometry = (frame.pointee.width, frame.pointee.height, frame.pointee.format)
        if context == nil || geometry != source {
            sws_freeContext(context)
            context = sws_getContext(
                geometry.0,
                geometry.1,
                AVPixelFormat(rawValue: geometry.2),
                width,
                height,
                format,
                SWS_BICUBIC,
                nil,
                nil,
                nil
            )
            guard context != nil else { throw FFError(code: cff_averror(EINVAL), operation: "sws_getContext") }
            source = geometry
        }
        if let free = pool.first(where: { av_frame_is_writable($0.pointer) != 0 }) {
            try check(sws_scale_frame(context, free.pointer, frame), "sws_scale_frame")
            return try Frame.referencing(free.pointer)
        }
        let output = try Frame.video(width: width, height: height, format: format)
        try check(sws_scale_frame(context, output.pointer, frame), "sws_scale_frame")
        guard pool.count < Self.poolSize else { return output }
        pool.append(output)
        return try Frame.referencing(output.pointer)
    }
}
