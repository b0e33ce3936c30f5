import CFFmpeg
import Synchronization

/// The time window a reader delivers, in the asset's own timestamps (absolute microseconds).
struct ReadWindow: Sendable {
    /// The instant that becomes 0 in the output.
    var start: Int64
    /// Exclusive end; `nil`: to the end of the input.
    var end: Int64?
    /// For copied video: the keyframe the export starts at, in its stream's time base.
    var keyframe: Keyframe?

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

/// How many packets an asset's decoders failed on, all tracks together: a reading whose
/// decoders never failed is clean (its media is what it is, whatever the headers say).
final class DecodeDamage: Sendable {
    private let failures = Atomic(0)

    func note() { failures.add(1, ordering: .relaxed) }

    var count: Int { failures.load(ordering: .relaxed) }
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
        _ packet: UnsafeMutablePointer<AVPacket>?,
        to handle: (UnsafeMutablePointer<AVFrame>) throws(MediaError) -> Bool
    ) throws(MediaError) {
        while true {
            let result = decoder.send(packet)
            if result == AVErr.again {
                guard try drain(into: handle) else { return }
                continue
            }
            if result < 0 && result != AVErr.eof {
                try checkPictureSize()
                if packet != nil {
                    decoder.damage?.note()
                    try budget.failed(result)
                }
            } else if packet != nil {
                budget.succeeded()
            }
            _ = try drain(into: handle)
            return
        }
    }

    /// After draining with `send(nil)`: makes the decoder take packets again (its state is
    /// reset, as after a seek).
    func resume() { avcodec_flush_buffers(decoder.context) }

    /// `limit_exceeded` when the stream now announces a picture over the decoder's
    /// `max_pixels` (the decoder refused to allocate it: a size change mid-stream).
    func checkPictureSize() throws(MediaError) {
        let (width, height) = decoder.pictureSize
        let limits = ResourceLimits(maxPixels: Int(decoder.context.pointee.max_pixels))
        if let error = limits.pictureTooLarge(width: width, height: height, what: "a picture of track \(trackIndex)") {
            throw error
        }
    }

    /// At the end: `decode_failed` if packets were sent, some failed, and no frame came out.
    func checkAnythingDecoded() throws(MediaError) {
        if budget.packets > 0 && decodedFrames == 0 && budget.errors > 0 { throw budget.exhausted() }
    }

    /// Receives frames until the decoder wants input; `false` once `handle` wants no more.
    private func drain(
        into handle: (UnsafeMutablePointer<AVFrame>) throws(MediaError) -> Bool
    ) throws(MediaError) -> Bool {
        while true {
            let result = decoder.receive(scratch.pointer)
            if result == AVErr.again || result == AVErr.eof { return true }
            if result < 0 {
                try checkPictureSize()
                decoder.damage?.note()
                try budget.failed(result)
                return true
            }
            defer { av_frame_unref(scratch.pointer) }
            decodedFrames += 1
            guard try handle(scratch.pointer) else { return false }
        }
    }
}
