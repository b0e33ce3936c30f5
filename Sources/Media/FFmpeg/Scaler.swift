import CFFmpeg

/// Converts video frames to one size and pixel format (`SwsContext`), re-creating the context
/// if the source geometry changes mid-stream.
final class Scaler {
    let width: Int32
    let height: Int32
    let format: AVPixelFormat
    private var context: OpaquePointer?
    private var source: (width: Int32, height: Int32, format: Int32) = (0, 0, -1)

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
        let output = Frame()
        output.pointer.pointee.width = width
        output.pointer.pointee.height = height
        output.pointer.pointee.format = format.rawValue
        try check(sws_scale_frame(context, output.pointer, frame), "sws_scale_frame")
        return output
    }
}
