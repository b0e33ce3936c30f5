import CFFmpeg

/// The engine of an audio input: buffers samples in a FIFO, encodes them in the encoder's frame
/// size (AAC: 1024), and pads silence where a track ends before the program.
final class AudioEngine: EncodingEngine {
    private let fifo: AudioFifo
    private var layout = AVChannelLayout()
    private let sampleRate: Int32
    private var nextPTS: Int64?

    init(encoding: AssetWriterInput.AudioEncoding, file: OutputFile) throws(MediaError) {
        sampleRate = Int32(encoding.sampleRate)
        av_channel_layout_default(&layout, Int32(encoding.channels))
        var layoutCopy = layout
        let encoder = try EncodingEngine.open(name: "aac", options: [:]) { context in
            context.pointee.sample_fmt = AV_SAMPLE_FMT_FLTP
            context.pointee.sample_rate = Int32(encoding.sampleRate)
            try check(av_channel_layout_copy(&context.pointee.ch_layout, &layoutCopy), "av_channel_layout_copy")
            if let bitrate = encoding.bitrate { context.pointee.bit_rate = Int64(bitrate) }
            context.pointee.time_base = AVRational(num: 1, den: Int32(encoding.sampleRate))
            context.pointee.thread_count = 0
            if file.needsGlobalHeader { context.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER }
        }
        fifo = AudioFifo(format: AV_SAMPLE_FMT_FLTP, channels: Int32(encoding.channels))
        try super.init(encoder: encoder, file: file)
        describe(as: encoding.source)
    }

    deinit { av_channel_layout_uninit(&layout) }

    /// The AAC encoder leaves the duration of a packet it made from a frame shorter than its
    /// own (the first after a range's pre-roll) at 0: a fragmented MP4 then holds a sample of no
    /// length, which readers take as two packets at one time. A packet lasts a frame's samples.
    override func prepare(_ packet: UnsafeMutablePointer<AVPacket>) {
        if packet.pointee.duration <= 0 { packet.pointee.duration = Int64(max(1, encoder.frameSize)) }
    }

    override func append(_ sample: SampleBuffer) throws(MediaError) {
        guard case .audio(let frame) = sample.payload else {
            throw MediaError(.internalError, "an audio input was given a non-audio sample")
        }
        if nextPTS == nil { nextPTS = sample.pts }
        do { try fifo.write(frame) } catch {
            throw MediaError(.encodeFailed, "buffering audio failed", detail: "\(error)")
        }
        // AAC takes exactly frame_size (1024) samples per frame (docs/ffmpeg.md #20).
        let frameSize = max(1, encoder.frameSize)
        while fifo.count >= frameSize { try encodeFromFifo(frameSize) }
    }

    /// Where the samples given so far end, in `timeBase` (1/sample rate).
    var endSample: Int64 { (nextPTS ?? 0) + Int64(fifo.count) }
    var timeBase: AVRational { encoder.timeBase }
    var frameSize: Int32 { encoder.frameSize }

    /// Appends silence until the samples end at `sample` (nothing if they already do).
    func padSilence(until sample: Int64) throws(MediaError) {
        if nextPTS == nil { nextPTS = 0 }
        let frameSize = max(1, encoder.frameSize)
        while endSample < sample {
            let count = Int32(min(sample - endSample, 4096))
            do {
                let silence = try Frame.audio(
                    samples: count,
                    format: AV_SAMPLE_FMT_FLTP,
                    layout: &layout,
                    sampleRate: sampleRate
                )
                av_samples_set_silence(
                    silence.pointer.pointee.extended_data,
                    0,
                    count,
                    layout.nb_channels,
                    AV_SAMPLE_FMT_FLTP
                )
                try fifo.write(silence)
            } catch {
                throw MediaError(.encodeFailed, "padding the sound with silence failed", detail: "\(error)")
            }
            while fifo.count >= frameSize { try encodeFromFifo(frameSize) }
        }
    }

    override func finish() throws(MediaError) {
        if fifo.count > 0 { try encodeFromFifo(fifo.count) }  // a short last frame (AV_CODEC_CAP_SMALL_LAST_FRAME)
        try encode(nil)
    }

    private func encodeFromFifo(_ count: Int32) throws(MediaError) {
        let frame: Frame
        do {
            frame = try Frame.audio(samples: count, format: AV_SAMPLE_FMT_FLTP, layout: &layout, sampleRate: sampleRate)
            try fifo.read(into: frame, count: count)
        } catch {
            throw MediaError(.encodeFailed, "preparing an audio frame failed", detail: "\(error)")
        }
        frame.pts = nextPTS ?? 0
        nextPTS = frame.pts + Int64(frame.sampleCount)
        try encode(frame.pointer)
    }
}
