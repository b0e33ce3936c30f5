import CFFmpeg

/// Decodes video, keeps the frames of the window (the first one is the frame *shown* at the
/// start), converts them to the output size and pixel format, applies rotation, and timestamps
/// them from 0 with each frame's duration known (one frame is held back for that).
final class VideoDecodePipeline: TrackPipeline {
    private let decoding: DecodeLoop
    private let maxPixels: Int
    private let scaler: Scaler
    /// HDR to SDR after the scaler (`ToneMap`), for `ColorPath.toneMap`.
    private let toneMap: ToneMapper?
    private let rotation: Int
    private let timeBase: AVRational
    private let window: ReadWindow
    private let startTimestamp: Int64
    private let defaultDuration: Int64
    private let sink: SampleSink
    /// The deprecated "J" formats: swscale converts them to limited range.
    private static let fullRangeFormats = Set(
        [AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P].map(\.rawValue)
    )

    /// The latest frame before the start: shown at the start if no frame starts exactly there.
    private var candidate: Frame?
    /// The last converted frame, waiting for the next one to know its duration.
    private var pending: Frame?
    private var started = false
    private var emittedAny = false
    private var reachedEnd = false
    private var lastTimestamp: Int64?
    private var lastSourceDuration: Int64 = 0

    init(
        decoder: CodecDecoder,
        stream: UnsafeMutablePointer<AVStream>,
        output: PictureSize,
        color: ColorPath = .standard,
        rotation: Int,
        window: ReadWindow,
        sink: @escaping SampleSink
    ) throws(MediaError) {
        decoding = DecodeLoop(decoder: decoder, trackIndex: Int(stream.pointee.index))
        maxPixels = Int(decoder.context.pointee.max_pixels)
        self.rotation = rotation
        // Scale to the pre-rotation size, then rotate: cheaper on the smaller picture.
        let turned = rotation % 180 != 0
        let (width, height) = (
            Int32(turned ? output.height : output.width), Int32(turned ? output.width : output.height)
        )
        if case .toneMap(let range) = color {
            scaler = Scaler(width: width, height: height, format: ToneMap.inputFormat)
            toneMap = try ToneMapper(width: width, height: height, from: range)
        } else {
            // HDR kept stays 10-bit to the encoder.
            scaler = Scaler(width: width, height: height, format: VideoEngine.pixelFormat(for: color))
            toneMap = nil
        }
        timeBase = stream.pointee.time_base
        self.window = window
        startTimestamp = window.startTimestamp(streamIndex: Int(stream.pointee.index), timeBase: timeBase)
        let rate = stream.pointee.avg_frame_rate.isValid ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
        defaultDuration = max(
            1,
            rate.isValid ? av_rescale_q(1, av_inv_q(rate), timeBase) : av_rescale_q(40_000, microsecondBase, timeBase)
        )
        self.sink = sink
    }

    func consume(_ packet: Packet) throws(MediaError) -> Bool {
        try send(packet.pointer)
        return !reachedEnd
    }

    func finish() throws(MediaError) {
        if !reachedEnd { try send(nil) }
        if !started, let candidate {
            // The stream ended before a frame at or after the start: the last frame is shown there.
            try output(candidate.pointer, pts: 0)
        }
        guard let last = pending else { return try decoding.checkAnythingDecoded() }
        let endTimestamp = window.end.map {
            av_rescale_q_rnd($0, microsecondBase, timeBase, AV_ROUND_UP) - startTimestamp
        }
        var duration = lastSourceDuration > 0 ? lastSourceDuration : defaultDuration
        if let endTimestamp, reachedEnd || last.pts + duration > endTimestamp { duration = endTimestamp - last.pts }
        try emit(last, duration: max(1, duration))
        pending = nil
    }

    private func send(_ packet: UnsafeMutablePointer<AVPacket>?) throws(MediaError) {
        try decoding.send(packet) { frame throws(MediaError) in
            try handle(frame)
            return !reachedEnd
        }
    }

    private func handle(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) {
        if Int(frame.pointee.width) * Int(frame.pointee.height) > maxPixels {
            let limits = ResourceLimits(maxPixels: maxPixels)
            if let error = limits.pictureTooLarge(
                width: Int(frame.pointee.width),
                height: Int(frame.pointee.height),
                what: "a picture of track \(decoding.trackIndex)"
            ) {
                throw error
            }
        }
        var timestamp = frame.pointee.best_effort_timestamp
        if timestamp == noPTS { timestamp = lastTimestamp.map { $0 + defaultDuration } ?? startTimestamp }
        lastTimestamp = timestamp
        lastSourceDuration = frame.pointee.pkt_duration
        if let end = window.end, av_compare_ts(timestamp, timeBase, end, microsecondBase) >= 0 {
            reachedEnd = true
            return
        }
        if !started {
            let order = av_compare_ts(timestamp, timeBase, window.start, microsecondBase)
            if order < 0 {
                candidate = try wrap { try Frame.referencing(frame) }
                return
            }
            started = true
            if order > 0, let candidate { try output(candidate.pointer, pts: 0) }
            candidate = nil
        }
        try output(frame, pts: timestamp - startTimestamp)
    }

    /// Converts a frame and queues the previous one, whose duration is now known.
    ///
    /// The first frame is shown from 0 even when the track starts after the window (video that
    /// begins a few ms after the audio): audio and video start together (docs/spec.md §2).
    private func output(_ frame: UnsafeMutablePointer<AVFrame>, pts: Int64) throws(MediaError) {
        let pts = emittedAny ? pts : 0
        // Not after the previous frame: dropped, as ffmpeg's vfr mode does.
        if let pending, pts <= pending.pts { return }
        emittedAny = true
        let converted = try wrap { () throws -> Frame in
            var picture = scaler.isIdentity(for: frame) ? try Frame.referencing(frame) : try scaler.scale(frame)
            if picture.pointer != frame {
                av_frame_copy_props(picture.pointer, frame)
                if Self.fullRangeFormats.contains(frame.pointee.format) {
                    picture.pointer.pointee.color_range = AVCOL_RANGE_MPEG
                }
            }
            if let toneMap { picture = try toneMap.map(picture) }
            if rotation != 0 { picture = try picture.rotated(clockwise: rotation) }
            picture.pointer.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
            picture.pointer.pointee.pict_type = AV_PICTURE_TYPE_NONE
            return picture
        }
        converted.pts = pts
        if let previous = pending { try emit(previous, duration: pts - previous.pts) }
        pending = converted
    }

    private func emit(_ frame: Frame, duration: Int64) throws(MediaError) {
        guard sink(SampleBuffer(payload: .video(frame), pts: frame.pts, duration: duration, timeBase: timeBase)) else {
            throw MediaError.cancelled()
        }
    }

    private func wrap<T>(_ body: () throws -> T) throws(MediaError) -> T {
        do { return try body() } catch {
            throw MediaError(
                .decodeFailed,
                "track \(decoding.trackIndex): converting a frame failed",
                detail: "\(error)"
            )
        }
    }
}
