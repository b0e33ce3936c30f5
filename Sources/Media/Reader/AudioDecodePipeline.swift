import CFFmpeg

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
    private var clock: AudioSampleClock
    /// The silence emitted before the track's first sample (output samples), once known.
    private(set) var leadingSilence: Int64?
    private var reachedEnd = false

    init(
        decoder: CodecDecoder,
        stream: UnsafeMutablePointer<AVStream>,
        sampleRate: Int,
        channels: Int,
        window: ReadWindow,
        sink: @escaping SampleSink
    ) {
        decoding = DecodeLoop(decoder: decoder, trackIndex: Int(stream.pointee.index))
        timeBase = stream.pointee.time_base
        self.window = window
        outputRate = Int32(sampleRate)
        clock = AudioSampleClock(rate: outputRate)
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

    /// Emits what the decoder and the resampler hold back, because the track has gone quiet in
    /// the file (a mix would otherwise get its last samples only at the very end); decoding
    /// goes on from the next packet, as after a seek.
    func emitHeldSamples() throws(MediaError) {
        guard !reachedEnd else { return }
        try send(nil)
        decoding.resume()
        try flushResampler()
        resampler = nil
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
        let first =
            timestamp != noPTS
            ? av_rescale_q(timestamp, timeBase, sampleBase)
            : (nextSample ?? av_rescale_q(window.start, microsecondBase, sampleBase))
        let count = Int64(frame.pointee.nb_samples)
        let expected = nextSample
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
            let silence = av_rescale_q(from - start, sampleBase, AVRational(num: 1, den: outputRate))
            leadingSilence = silence
            try emitSilence(silence)
        }
        // A gap in the timestamps (E-AC-3 in MP4 whose frames hold fewer samples than their
        // spacing, a transport stream's dropout) is silence, not skipped: the audio stays in
        // sync with the video and the output lasts as long as the input says. Jitter of a few
        // milliseconds (timestamps rounded to the container's unit) is not a gap.
        if let expected, first - expected > Int64(rate) / 100 {
            let gap = min(first, end) - max(expected, start)
            if gap > 0 {
                if let resampler, let held = try wrap({ try resampler.flush() }) { try emit(held) }
                try emitSilence(av_rescale_q(gap, sampleBase, AVRational(num: 1, den: outputRate)))
            }
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
        // The same number of channels: they pass through as they are (no remix between, say,
        // 5.1(side) and 5.1), so a waveform reads the samples the file holds.
        var target = AVChannelLayout()
        defer { av_channel_layout_uninit(&target) }
        if layout.nb_channels == outputLayout.nb_channels {
            av_channel_layout_copy(&target, &layout)
        } else {
            av_channel_layout_copy(&target, &outputLayout)
        }
        let created = try wrap {
            try Resampler(
                input: &layout,
                format: AVSampleFormat(rawValue: input.1),
                rate: input.0,
                output: &target,
                outputFormat: AV_SAMPLE_FMT_FLTP,
                outputRate: outputRate
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
            let silence = try wrap {
                try Frame.audio(
                    samples: count,
                    format: AV_SAMPLE_FMT_FLTP,
                    layout: &outputLayout,
                    sampleRate: outputRate
                )
            }
            av_samples_set_silence(
                silence.pointer.pointee.extended_data,
                0,
                count,
                outputLayout.nb_channels,
                AV_SAMPLE_FMT_FLTP
            )
            try emit(silence)
            remaining -= Int64(count)
        }
    }

    private func emit(_ frame: Frame) throws(MediaError) { try clock.emit(frame, to: sink) }

    private func wrap<T>(_ body: () throws -> T) throws(MediaError) -> T {
        do { return try body() } catch {
            throw MediaError(.decodeFailed, "track \(decoding.trackIndex): converting audio failed", detail: "\(error)")
        }
    }
}

/// Numbers audio frames from sample 0 and hands them to a sink as samples.
struct AudioSampleClock {
    let rate: Int32
    private(set) var emitted: Int64 = 0

    init(rate: Int32) { self.rate = rate }

    mutating func emit(_ frame: Frame, to sink: SampleSink) throws(MediaError) {
        let count = Int64(frame.sampleCount)
        let pts = emitted
        frame.pts = pts
        emitted += count
        let sample = SampleBuffer(
            payload: .audio(frame),
            pts: pts,
            duration: count,
            timeBase: AVRational(num: 1, den: rate)
        )
        guard sink(sample) else { throw MediaError.cancelled() }
    }
}
