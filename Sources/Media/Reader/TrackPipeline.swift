import CFFmpeg

/// The time window a reader delivers, in the asset's own timestamps (absolute microseconds).
struct ReadWindow: @unchecked Sendable {
    /// The instant that becomes 0 in the output.
    var start: Int64
    /// Exclusive end; `nil`: to the end of the input.
    var end: Int64?
    /// For copied video: the keyframe the export starts at, in its stream's time base.
    var keyframe: (streamIndex: Int, pts: Int64, timeBase: AVRational)?

    /// `start` in a stream's time base, rounded down (the copied keyframe's own pts exactly).
    func startTimestamp(streamIndex: Int, timeBase: AVRational) -> Int64 {
        if let keyframe, keyframe.streamIndex == streamIndex { return keyframe.pts }
        return av_rescale_q_rnd(start, microsecondBase, timeBase, AV_ROUND_DOWN)
    }
}

/// Turns the packets of one track into samples for a writer input: one per reader output,
/// run on the output's own thread.
protocol TrackPipeline: AnyObject {
    /// Takes one packet; returns `false` once the track needs no more (the range ended).
    func consume(_ packet: Packet) throws(MediaError) -> Bool
    /// The input ended: emits what is held back (decoder delay, the last frame).
    func finish() throws(MediaError)
}

/// Sends a sample to the output's queue; `false` when the reading was cancelled.
typealias SampleSink = (SampleBuffer) -> Bool

/// Damaged streams are decoded with FFmpeg's error concealment; a track fails with
/// `decode_failed` only when damage dominates: 100 packets in a row, or at least 50 packets and
/// more than half of those sent so far.
struct DecodeErrorBudget {
    let trackIndex: Int
    /// What failed on each packet, for the message: "decode" or "copy".
    let action: String
    private(set) var packets = 0
    private(set) var errors = 0
    private var consecutive = 0
    private var lastError: String?

    init(trackIndex: Int, action: String = "decode") {
        self.trackIndex = trackIndex
        self.action = action
    }

    mutating func succeeded() {
        packets += 1
        consecutive = 0
    }

    mutating func failed(_ code: Int32) throws(MediaError) {
        packets += 1
        errors += 1
        consecutive += 1
        lastError = FFmpegLog.takeLastError() ?? FFError.message(for: code)
        if consecutive >= 100 || (errors >= 50 && errors * 2 > packets) {
            throw exhausted()
        }
    }

    func exhausted() -> MediaError {
        MediaError(
            .decodeFailed,
            "track \(trackIndex) is too damaged to \(action): \(errors) of \(packets) packets failed (last: \(lastError ?? "unknown error"))"
        )
    }
}

/// Feeds one decoder: sends a packet (or `nil` to drain it at the end), hands every frame that
/// comes out to a handler, and counts damage against the error budget.
final class DecodeLoop {
    private let decoder: CodecDecoder
    private let scratch = Frame()
    private var budget: DecodeErrorBudget
    private var decodedFrames = 0

    init(decoder: CodecDecoder, trackIndex: Int) {
        self.decoder = decoder
        budget = DecodeErrorBudget(trackIndex: trackIndex)
    }

    var trackIndex: Int { budget.trackIndex }

    /// Sends `packet` and passes each frame (valid only during the call) to `handle`, until
    /// `handle` returns `false`.
    func send(
        _ packet: UnsafeMutablePointer<AVPacket>?, to handle: (UnsafeMutablePointer<AVFrame>) throws(MediaError) -> Bool
    ) throws(MediaError) {
        while true {
            let result = decoder.send(packet)
            if result == AVErr.again {
                guard try drain(into: handle) else { return }
                continue
            }
            if result < 0 && result != AVErr.eof {
                try checkPictureSize()
                if packet != nil { try budget.failed(result) }
            } else if packet != nil {
                budget.succeeded()
            }
            _ = try drain(into: handle)
            return
        }
    }

    /// `limit_exceeded` when the stream now announces a picture over the decoder's
    /// `max_pixels` (the decoder refused to allocate it: a size change mid-stream).
    func checkPictureSize() throws(MediaError) {
        let (width, height) = decoder.pictureSize
        let limits = ResourceLimits(maxPixels: Int(decoder.context.pointee.max_pixels))
        if let error = limits.pictureTooLarge(width: width, height: height, what: "a picture of track \(trackIndex)") { throw error }
    }

    /// At the end: `decode_failed` if packets were sent, some failed, and no frame came out.
    func checkAnythingDecoded() throws(MediaError) {
        if budget.packets > 0 && decodedFrames == 0 && budget.errors > 0 { throw budget.exhausted() }
    }

    /// Receives frames until the decoder wants input; `false` once `handle` wants no more.
    private func drain(into handle: (UnsafeMutablePointer<AVFrame>) throws(MediaError) -> Bool) throws(MediaError) -> Bool {
        while true {
            let result = decoder.receive(scratch.pointer)
            if result == AVErr.again || result == AVErr.eof { return true }
            if result < 0 {
                try checkPictureSize()
                try budget.failed(result)
                return true
            }
            defer { av_frame_unref(scratch.pointer) }
            decodedFrames += 1
            guard try handle(scratch.pointer) else { return false }
        }
    }
}

// MARK: - Video

/// Decodes video, keeps the frames of the window (the first one is the frame *shown* at the
/// start), converts them to the output size and pixel format, applies rotation, and timestamps
/// them from 0 with each frame's duration known (one frame is held back for that).
final class VideoDecodePipeline: TrackPipeline {
    private let decoding: DecodeLoop
    private let maxPixels: Int
    private let scaler: Scaler
    private let rotation: Int
    private let timeBase: AVRational
    private let window: ReadWindow
    private let startTimestamp: Int64
    private let defaultDuration: Int64
    private let sink: SampleSink
    /// The deprecated "J" formats: swscale converts them to limited range.
    private static let fullRangeFormats = Set([AV_PIX_FMT_YUVJ420P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUVJ444P].map(\.rawValue))

    /// The latest frame before the start: shown at the start if no frame starts exactly there.
    private var candidate: Frame?
    /// The last converted frame, waiting for the next one to know its duration.
    private var pending: Frame?
    private var started = false
    private var emittedAny = false
    private var reachedEnd = false
    private var lastTimestamp: Int64?
    private var lastSourceDuration: Int64 = 0

    init(decoder: CodecDecoder, stream: UnsafeMutablePointer<AVStream>, output: PictureSize, rotation: Int, window: ReadWindow, sink: @escaping SampleSink) {
        decoding = DecodeLoop(decoder: decoder, trackIndex: Int(stream.pointee.index))
        maxPixels = Int(decoder.context.pointee.max_pixels)
        self.rotation = rotation
        // Scale to the pre-rotation size, then rotate: cheaper on the smaller picture.
        let turned = rotation % 180 != 0
        scaler = Scaler(
            width: Int32(turned ? output.height : output.width),
            height: Int32(turned ? output.width : output.height),
            format: AV_PIX_FMT_YUV420P
        )
        timeBase = stream.pointee.time_base
        self.window = window
        startTimestamp = window.startTimestamp(streamIndex: Int(stream.pointee.index), timeBase: timeBase)
        let rate = stream.pointee.avg_frame_rate.isValid ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
        defaultDuration = max(1, rate.isValid ? av_rescale_q(1, av_inv_q(rate), timeBase) : av_rescale_q(40_000, microsecondBase, timeBase))
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
        let endTimestamp = window.end.map { av_rescale_q_rnd($0, microsecondBase, timeBase, AV_ROUND_UP) - startTimestamp }
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
            if let error = limits.pictureTooLarge(width: Int(frame.pointee.width), height: Int(frame.pointee.height), what: "a picture of track \(decoding.trackIndex)") { throw error }
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
        if let pending, pts <= pending.pts { return }  // not after the previous frame: dropped, as ffmpeg's vfr mode does
        emittedAny = true
        let converted = try wrap { () throws -> Frame in
            var picture = scaler.isIdentity(for: frame) ? try Frame.referencing(frame) : try scaler.scale(frame)
            if picture.pointer != frame {
                av_frame_copy_props(picture.pointer, frame)
                if Self.fullRangeFormats.contains(frame.pointee.format) {
                    picture.pointer.pointee.color_range = AVCOL_RANGE_MPEG
                }
            }
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
            throw MediaError(.decodeFailed, "track \(decoding.trackIndex): converting a frame failed", detail: "\(error)")
        }
    }
}

// MARK: - Audio

/// Decodes audio, trims it to the window sample-accurately *before* resampling
/// (docs/ffmpeg.md #21), then resamples and downmixes to the output format. Samples are counted
/// from 0; a track that starts after the window's start is preceded by silence.
final class AudioDecodePipeline: TrackPipeline {
    private let decoding: DecodeLoop
    private let timeBase: AVRational
    private let window: ReadWindow
    private let outputRate: Int32
    private var outputLayout = AVChannelLayout()
    private let sink: SampleSink
    private var resampler: Resampler?
    private var resamplerInput: (rate: Int32, format: Int32, channels: Int32) = (0, -1, 0)
    private var nextSample: Int64?
    private var started = false
    private var emitted: Int64 = 0
    private var reachedEnd = false

    init(decoder: CodecDecoder, stream: UnsafeMutablePointer<AVStream>, sampleRate: Int, channels: Int, window: ReadWindow, sink: @escaping SampleSink) {
        decoding = DecodeLoop(decoder: decoder, trackIndex: Int(stream.pointee.index))
        timeBase = stream.pointee.time_base
        self.window = window
        outputRate = Int32(sampleRate)
        av_channel_layout_default(&outputLayout, Int32(channels))
        self.sink = sink
    }

    deinit { av_channel_layout_uninit(&outputLayout) }

    func consume(_ packet: Packet) throws(MediaError) -> Bool {
        try send(packet.pointer)
        return !reachedEnd
    }

    func finish() throws(MediaError) {
        if !reachedEnd { try send(nil) }
        try flushResampler()
        try decoding.checkAnythingDecoded()
    }

    private func send(_ packet: UnsafeMutablePointer<AVPacket>?) throws(MediaError) {
        try decoding.send(packet) { frame throws(MediaError) in
            try handle(frame)
            return !reachedEnd
        }
    }

    private func handle(_ frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) {
        let rate = frame.pointee.sample_rate
        guard rate > 0, frame.pointee.nb_samples > 0 else { return }
        let sampleBase = AVRational(num: 1, den: rate)
        let timestamp = frame.pointee.best_effort_timestamp
        let first = timestamp != noPTS ? av_rescale_q(timestamp, timeBase, sampleBase) : (nextSample ?? av_rescale_q(window.start, microsecondBase, sampleBase))
        let count = Int64(frame.pointee.nb_samples)
        nextSample = first + count
        let start = av_rescale_q(window.start, microsecondBase, sampleBase)
        let end = window.end.map { av_rescale_q($0, microsecondBase, sampleBase) } ?? Int64.max
        if first >= end {
            reachedEnd = true
            return
        }
        let from = max(first, start)
        let to = min(first + count, end)
        guard to > from else { return }
        if !started {
            // A track that starts after the window starts with silence, so it starts at 0 in sync.
            started = true
            try emitSilence(av_rescale_q(from - start, sampleBase, AVRational(num: 1, den: outputRate)))
        }
        let converter = try resampler(for: frame)
        let converted = try wrap { try converter.convert(frame, offset: Int32(from - first), count: Int32(to - from)) }
        if let converted { try emit(converted) }
        if to == end { reachedEnd = true }
    }

    /// The resampler for this frame's format, rate and channels (re-created if they change).
    private func resampler(for frame: UnsafeMutablePointer<AVFrame>) throws(MediaError) -> Resampler {
        let input = (frame.pointee.sample_rate, frame.pointee.format, frame.pointee.ch_layout.nb_channels)
        if let resampler, input == resamplerInput { return resampler }
        try flushResampler()
        var layout = AVChannelLayout()
        defer { av_channel_layout_uninit(&layout) }
        if frame.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC {
            av_channel_layout_default(&layout, frame.pointee.ch_layout.nb_channels)
        } else {
            av_channel_layout_copy(&layout, &frame.pointee.ch_layout)
        }
        let created = try wrap {
            try Resampler(
                input: &layout, format: AVSampleFormat(rawValue: input.1), rate: input.0,
                output: &outputLayout, outputFormat: AV_SAMPLE_FMT_FLTP, outputRate: outputRate
            )
        }
        resampler = created
        resamplerInput = input
        return created
    }

    private func flushResampler() throws(MediaError) {
        guard let resampler else { return }
        if let rest = try wrap({ try resampler.flush() }) { try emit(rest) }
    }

    private func emitSilence(_ samples: Int64) throws(MediaError) {
        var remaining = samples
        while remaining > 0 {
            let count = Int32(min(remaining, 4096))
            let silence = try wrap { try Frame.audio(samples: count, format: AV_SAMPLE_FMT_FLTP, layout: &outputLayout, sampleRate: outputRate) }
            av_samples_set_silence(silence.pointer.pointee.extended_data, 0, count, outputLayout.nb_channels, AV_SAMPLE_FMT_FLTP)
            try emit(silence)
            remaining -= Int64(count)
        }
    }

    private func emit(_ frame: Frame) throws(MediaError) {
        let count = Int64(frame.sampleCount)
        let pts = emitted
        frame.pts = pts
        emitted += count
        guard sink(SampleBuffer(payload: .audio(frame), pts: pts, duration: count, timeBase: AVRational(num: 1, den: outputRate))) else {
            throw MediaError.cancelled()
        }
    }

    private func wrap<T>(_ body: () throws -> T) throws(MediaError) -> T {
        do { return try body() } catch {
            throw MediaError(.decodeFailed, "track \(decoding.trackIndex): converting audio failed", detail: "\(error)")
        }
    }
}

// MARK: - Copy

/// Passes compressed packets through (passthrough): video from the chosen keyframe, other
/// tracks from the same instant, timestamps rebased so the keyframe is at 0.
final class CopyPipeline: TrackPipeline {
    private let isVideo: Bool
    private let timeBase: AVRational
    private let startTimestamp: Int64
    private let keyframePTS: Int64?
    private let sink: SampleSink
    private var started: Bool

    init(stream: UnsafeMutablePointer<AVStream>, window: ReadWindow, sink: @escaping SampleSink) {
        let index = Int(stream.pointee.index)
        isVideo = stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO
        timeBase = stream.pointee.time_base
        startTimestamp = window.startTimestamp(streamIndex: index, timeBase: timeBase)
        keyframePTS = window.keyframe?.streamIndex == index ? window.keyframe?.pts : nil
        self.sink = sink
        started = !isVideo
    }

    func consume(_ packet: Packet) throws(MediaError) -> Bool {
        if !started {
            // Video starts at the chosen keyframe (or the first keyframe when reading from the top).
            guard packet.isKeyframe, keyframePTS == nil || packet.pts == keyframePTS || packet.pts == noPTS else { return true }
            started = true
        } else if !isVideo, packet.pts != noPTS, packet.pts < startTimestamp {
            return true
        }
        if packet.pts != noPTS { packet.pts -= startTimestamp }
        if packet.dts != noPTS { packet.dts -= startTimestamp }
        let pts = packet.pts != noPTS ? packet.pts : packet.dts
        guard sink(SampleBuffer(payload: .packet(packet), pts: pts, duration: max(0, packet.duration), timeBase: timeBase)) else {
            throw MediaError.cancelled()
        }
        return true
    }

    func finish() throws(MediaError) {}
}
