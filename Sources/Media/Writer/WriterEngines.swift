import CFFmpeg
import Synchronization

// MARK: - Engines: what each kind of input does with a sample

class Engine {
    let file: OutputFile
    let streamIndex: Int
    let codecName: String
    weak var writer: AssetWriter?
    let packet = Packet()

    init(file: OutputFile, streamIndex: Int, codecName: String) {
        self.file = file
        self.streamIndex = streamIndex
        self.codecName = codecName
    }

    func append(_ sample: SampleBuffer) throws(MediaError) {}
    func finish() throws(MediaError) {}

    /// The input packet that released what this input writes now (`InputOrder`).
    var sequence: Int64 = 0

    /// Writes `packet` (in `timeBase`) to this input's stream. A failure of the output's disk
    /// is `output_unwritable`; the muxer refusing the packet itself goes to `refused(_:)`.
    func write(_ packet: UnsafeMutablePointer<AVPacket>, from timeBase: AVRational) throws(MediaError) {
        packet.pointee.stream_index = Int32(streamIndex)
        av_packet_rescale_ts(packet, timeBase, file.stream(streamIndex).pointee.time_base)
        adjust(packet)
        var size: Int64 = 0
        if try muxing({ size = try file.write(packet, sequence: sequence) }) { accepted() }
        if let writer, size > writer.limits.maxOutputBytes {
            throw writer.limits.outputTooLarge(size, path: writer.destination)
        }
    }

    /// In the input's order: this stream's packets still to come have at least `sequence`
    /// (a marker: the track has nothing in the file meanwhile), or none come (`nil`: finished).
    func advance(to sequence: Int64?) throws(MediaError) {
        _ = try muxing {
            if let sequence {
                try file.advance(stream: streamIndex, to: sequence)
            } else {
                try file.finish(stream: streamIndex)
            }
        }
    }

    /// Runs a write to the muxer: `false` when it refused a packet and `refused(_:)` let that pass.
    private func muxing(_ body: () throws -> Void) throws(MediaError) -> Bool {
        do {
            try body()
            return true
        } catch let error as FFError where error.isExit {
            throw writer?.error ?? MediaError.cancelled()
        } catch let error as FFError where error.isOutputIO {
            throw AssetWriter.writeError(error, path: writer?.destination ?? file.path)
        } catch let error as FFError {
            try refused(error)
            return false
        } catch {
            throw MediaError(.internalError, "writing a packet: \(error)")
        }
    }

    /// A last look at a packet in the output stream's time base, before the muxer.
    func adjust(_ packet: UnsafeMutablePointer<AVPacket>) {}

    func accepted() {}

    /// The muxer refused a packet (invalid data, timestamps it cannot store). Encoded packets
    /// are ours: `encode_failed`.
    func refused(_ error: FFError) throws(MediaError) {
        throw MediaError(
            .encodeFailed,
            "track \(streamIndex): the \(codecName) packets cannot be written: \(FFmpegLog.takeLastError() ?? FFError.message(for: error.code))",
            detail: error.description
        )
    }
}

/// Shared by the video and audio encoders: send a frame, write what comes out.
class EncodingEngine: Engine {
    let encoder: CodecEncoder

    init(encoder: CodecEncoder, file: OutputFile) throws(MediaError) {
        self.encoder = encoder
        let stream: UnsafeMutablePointer<AVStream>
        do {
            stream = try file.addStream()
            try check(
                avcodec_parameters_from_context(stream.pointee.codecpar, encoder.context),
                "avcodec_parameters_from_context"
            )
        } catch {
            throw MediaError(.encodeFailed, "setting up the \(encoder.codecName) stream failed", detail: "\(error)")
        }
        stream.pointee.time_base = encoder.timeBase
        super.init(
            file: file,
            streamIndex: Int(stream.pointee.index),
            codecName: String(cString: avcodec_get_name(encoder.context.pointee.codec_id))
        )
    }

    func encode(_ frame: UnsafeMutablePointer<AVFrame>?) throws(MediaError) {
        let result = encoder.send(frame)
        if result < 0 && result != AVErr.eof {
            throw MediaError(
                .encodeFailed,
                "\(encoder.codecName) refused a frame: \(FFmpegLog.takeLastError() ?? FFError.message(for: result))"
            )
        }
        while true {
            let received = encoder.receive(packet.pointer)
            if received == AVErr.again || received == AVErr.eof { return }
            if received < 0 {
                throw MediaError(
                    .encodeFailed,
                    "\(encoder.codecName) failed: \(FFmpegLog.takeLastError() ?? FFError.message(for: received))"
                )
            }
            prepare(packet.pointer)
            try write(packet.pointer, from: encoder.timeBase)
        }
    }

    /// A chance to fix up a packet before it is written.
    func prepare(_ packet: UnsafeMutablePointer<AVPacket>) {}

    static func open(
        name: String,
        options: [String: String],
        configure: (UnsafeMutablePointer<AVCodecContext>) throws -> Void
    ) throws(MediaError) -> CodecEncoder {
        guard CodecEncoder.isAvailable(name) else {
            throw MediaError(.presetIncompatible, "this FFmpeg build has no \(name) encoder")
        }
        do {
            return try CodecEncoder(name: name, options: options, configure: configure)
        } catch {
            let detail = FFmpegLog.takeLastError().map { ": \($0)" } ?? ""
            throw MediaError(.encodeFailed, "the \(name) encoder could not be opened\(detail)", detail: "\(error)")
        }
    }
}

final class VideoEngine: EncodingEngine {
    /// Pictures larger than this (DCI 4K, 4096x2160) get a shorter encoder lookahead.
    static let largePicture = 4096 * 2160

    /// Frame durations by pts: libx264 in 5.1 returns packets without (docs/ffmpeg.md #19).
    private var durations: [Int64: Int64] = [:]
    /// A segment's cut (`SegmentCut`), and the frame held back until the next one says whether
    /// it is the segment's last.
    private let cut: SegmentCut?
    private var held: SampleBuffer?
    private var forcedIDR = false
    /// Frames before the cut's end sent and not yet out of the encoder; whether one at or after
    /// it was sent; whether every frame of the segment is out (the rest is post-roll, there only
    /// for the encoder's lookahead: once the segment is out it need not be encoded).
    private var pendingBeforeEnd = 0
    private var sentPastEnd = false
    private var segmentOut = false
    /// A segment's frames given to the encoder, from its start to its end: what the source
    /// decoded to there (fewer than the plan's where a damaged packet gave no picture).
    private(set) var segmentFrames = 0

    init(encoding: AssetWriterInput.VideoEncoding, file: OutputFile) throws(MediaError) {
        cut = encoding.cut
        let source = encoding.source
        let timeBase = source.timeBase.av
        var options: [String: String] = [:]
        if let crf = encoding.crf { options["crf"] = "\(crf)" }
        if let speed = encoding.encoderPreset { options["preset"] = speed }
        // Above 4K (8K) the encoder's lookahead holds most of the memory (40 frames of
        // 33 MP: 6.6 GB for x264 at 8K, the ffmpeg CLI's default too); 10 frames keep an 8K
        // export near 4 GB, at a small cost in compression (docs/benchmarks.md, "8K").
        // x265 keeps far more per frame: 5 frames and 2 B-frames (4.6 -> about 4 GB at 8K).
        let large = encoding.size.width * encoding.size.height > VideoEngine.largePicture
        if encoding.codec == .hevc {
            options["x265-params"] = "log-level=error" + (large ? ":rc-lookahead=5:bframes=2" : "")
        } else {
            let parameters =
                (large ? ["rc-lookahead=10"] : []) + (encoding.stitchable ? ["stitchable=1"] : [])
                + (encoding.alignedKeyframes ? ["scenecut=0"] : [])
                + (encoding.shallowReorder ? ["b-pyramid=none"] : [])
            if !parameters.isEmpty { options["x264-params"] = parameters.joined(separator: ":") }
        }
        // HDR10 kept: the mastering display and light level go into the stream's SEI (x265 does
        // not take them from the frames in FFmpeg 5.1).
        if encoding.codec == .hevc, case .keep(.pq) = encoding.color {
            options["x265-params", default: ""] += VideoEngine.hdr10Parameters(of: source)
        }
        if encoding.codec == .hevc && encoding.alignedKeyframes {
            options["x265-params", default: ""] +=
                ":scenecut=0:open-gop=0" + (encoding.shallowReorder ? ":b-pyramid=0" : "")
        }
        // A forced I-frame is an IDR (a segment's first frame: nothing after it refers before it).
        if encoding.cut != nil || encoding.alignedKeyframes { options["forced-idr"] = "1" }
        let encoder = try EncodingEngine.open(name: encoding.codec.encoderName!, options: options) { context in
            context.pointee.width = Int32(encoding.size.width)
            context.pointee.height = Int32(encoding.size.height)
            context.pointee.pix_fmt = VideoEngine.pixelFormat(for: encoding.color)
            context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
            context.pointee.time_base = timeBase
            if let rate = encoding.frameRate ?? source.frameRateRational { context.pointee.framerate = rate.av }
            if let bitrate = encoding.bitrate { context.pointee.bit_rate = Int64(bitrate) }
            if encoding.alignedKeyframes {
                // Keyframes come only where they are forced (every 2 s); a long GOP otherwise.
                context.pointee.gop_size = 100_000
                context.pointee.keyint_min = 1
                if let bitrate = encoding.bitrate {
                    context.pointee.rc_max_rate = Int64(bitrate) * 3 / 2
                    context.pointee.rc_buffer_size = Int32(clamping: bitrate * 2)
                }
            }
            VideoEngine.tagColor(context, source: source, path: encoding.color)
            // threads=auto like the ffmpeg CLI; 1 (the default) makes x264 ~1.8x slower (docs/ffmpeg.md #16).
            context.pointee.thread_count = Int32(encoding.threads ?? 0)
            // x264's rate control for a target bit rate (ABR) reads its frame threads' progress,
            // so the same export gave other bytes now and then under load; slice threads are
            // the same bytes on every run, for about 1 % more CPU time (docs/ffmpeg.md #27).
            if VideoEngine.slicesThreads(encoding) { context.pointee.thread_type = FF_THREAD_SLICE }
            if file.needsGlobalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        }
        try super.init(encoder: encoder, file: file)
        describe(as: source)
        if encoding.codec == .hevc {
            file.stream(streamIndex).pointee.codecpar.pointee.codec_tag = cff_mktag(0x68, 0x76, 0x63, 0x31)  // hvc1
        }
    }

    /// Whether x264 runs with slice threads rather than frame threads: an export to a target bit
    /// rate (no CRF) outside a ladder (whose renditions add VBV, nondeterministic either way).
    static func slicesThreads(_ encoding: AssetWriterInput.VideoEncoding) -> Bool {
        encoding.codec == .h264 && encoding.crf == nil && encoding.bitrate != nil && !encoding.alignedKeyframes
    }

    override func append(_ sample: SampleBuffer) throws(MediaError) {
        guard case .video = sample.payload else {
            throw MediaError(.internalError, "a video input was given a non-video sample")
        }
        guard let cut else { return try send(sample, type: AV_PICTURE_TYPE_NONE) }
        try appendSegmentFrame(sample, cut: cut)
    }

    /// Encodes `sample`, an IDR if `keyframe` (a rendition of a ladder: every rendition gets
    /// its keyframes at the same times).
    func append(_ sample: SampleBuffer, keyframe: Bool) throws(MediaError) {
        try send(sample, type: keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE)
    }

    private func appendSegmentFrame(_ sample: SampleBuffer, cut: SegmentCut) throws(MediaError) {
        // A segment's first frame is an IDR; its last (the one before the first at or after
        // `end`) a P-frame, so that no frame of the segment refers to one after it.
        let time = av_rescale_q(sample.pts, sample.timeBase, microsecondBase)
        if let held {
            let heldTime = av_rescale_q(held.pts, held.timeBase, microsecondBase)
            try send(held, type: heldTime < cut.end && time >= cut.end ? AV_PICTURE_TYPE_P : AV_PICTURE_TYPE_NONE)
        }
        var type = AV_PICTURE_TYPE_NONE
        if !forcedIDR, time >= cut.start {
            forcedIDR = true
            type = AV_PICTURE_TYPE_I
        }
        if type == AV_PICTURE_TYPE_I {
            try send(sample, type: type)
            held = nil
        } else {
            held = sample
        }
    }

    private func send(_ sample: SampleBuffer, type: AVPictureType) throws(MediaError) {
        guard case .video(let frame) = sample.payload, !segmentOut else { return }
        if let cut {
            let time = av_rescale_q(sample.pts, sample.timeBase, microsecondBase)
            if time < cut.end {
                pendingBeforeEnd += 1
                if time >= cut.start { segmentFrames += 1 }
            } else {
                sentPastEnd = true
            }
        }
        frame.pts = sample.pts
        frame.pointer.pointee.pict_type = type
        durations[sample.pts] = sample.duration
        try encode(frame.pointer)
    }

    override func finish() throws(MediaError) {
        if let held {
            self.held = nil
            try send(held, type: AV_PICTURE_TYPE_NONE)
        }
        // A segment already out leaves its post-roll in the encoder, never encoded.
        if !segmentOut { try encode(nil) }
    }

    override func prepare(_ packet: UnsafeMutablePointer<AVPacket>) {
        let duration = durations.removeValue(forKey: packet.pointee.pts)
        if packet.pointee.duration <= 0 { packet.pointee.duration = duration ?? 1 }
        guard let cut else { return }
        if av_rescale_q(packet.pointee.pts, encoder.timeBase, microsecondBase) < cut.end { pendingBeforeEnd -= 1 }
        // Every frame before the end comes out before any after it (the last is a P-frame).
        if sentPastEnd && pendingBeforeEnd == 0 { segmentOut = true }
    }
}
