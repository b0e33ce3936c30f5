import CFFmpeg

/// Reads several audio tracks as one (`AVAssetReaderAudioMixOutput`): each is decoded and
/// converted to `sampleRate` and `channels` as a track output would be, placed on the range's
/// timeline (a track that starts later is preceded by silence, so all stay in sync), scaled by
/// its volume and summed. The sum is not clipped: float samples may exceed ±1 where loud tracks
/// add up, and whoever makes integers of them (an encoder, a waveform) clips.
///
/// The tracks come through the demuxer in file order, so they are mixed as they arrive; each
/// waits in a small FIFO for the others. A track that has not started yet is taken as silent
/// up to where the container says it starts, or up to `interleaveSlack` before the furthest
/// packet of the others (files interleave their tracks by time), so a track that starts late
/// is not waited for. A file that stores its tracks further apart than that — one track's
/// packets long after another's of the same time — fails with `input_unsupported` rather than
/// buffer a track whole or mix a wrong sum.
public final class AssetReaderAudioMixOutput: AssetReaderOutput, @unchecked Sendable {
    public let sampleRate: Int
    public let channels: Int
    /// The gain of each track, by track index (AVAudioMix's input parameters); 1 when absent.
    public let volumes: [Int: Float]

    /// How far apart (in seconds of audio) the tracks may be stored in the file.
    static let maximumSkew = 30
    /// How far behind the others a track's packets may come in the file (seconds; FFmpeg's
    /// muxers interleave within 10 s).
    static let interleaveSlack = 10

    public init(audioTracks: [AssetTrack], sampleRate: Int, channels: Int, volumes: [Int: Float] = [:]) {
        precondition(audioTracks.allSatisfy { $0.mediaType == .audio }, "a mix reads audio tracks")
        self.sampleRate = sampleRate
        self.channels = channels
        self.volumes = volumes
        super.init(tracks: audioTracks, sampleQueueCapacity: 8)
    }

    override var decodesAudio: Bool { true }

    override func makePipeline(_ context: PipelineContext) throws(MediaError) -> TrackPipeline {
        let mix = AudioMixPipeline(
            sampleRate: Int32(sampleRate),
            channels: Int32(channels),
            maximumSkew: Int32(Self.maximumSkew * sampleRate),
            interleaveSlack: Int64(Self.interleaveSlack * sampleRate),
            windowStart: context.window.start
        ) { [unowned self] in deliver($0) }
        for track in tracks {
            // Where the track says it starts, in output samples from the window's start: until
            // then it is silent, and the mix need not wait for its packets.
            let stream = context.stream(track)
            let firstPTS = stream.pointee.start_time
            let declaredStart =
                firstPTS == noPTS
                ? 0
                : max(
                    0,
                    av_rescale_q(
                        av_rescale_q(firstPTS, stream.pointee.time_base, microsecondBase) - context.window.start,
                        microsecondBase,
                        AVRational(num: 1, den: Int32(sampleRate))
                    )
                )
            try mix.addTrack(
                index: track.index,
                timeBase: stream.pointee.time_base,
                volume: volumes[track.index] ?? 1,
                declaredStart: declaredStart
            ) { sink throws(MediaError) in
                AudioDecodePipeline(
                    decoder: try context.makeDecoder(track),
                    stream: context.stream(track),
                    sampleRate: sampleRate,
                    channels: channels,
                    window: context.window,
                    sink: sink
                )
            }
        }
        return mix
    }
}

/// Decodes several audio tracks (one `AudioDecodePipeline` each, into a FIFO) and emits their
/// sum as far as every track still running has reached.
///
/// Positions are output samples from the window's start. A track whose FIFO is empty is mixed
/// as silence up to where it is known to be silent: where the container says it starts (before
/// it has), or `interleaveSlack` behind the furthest packet of any track (files interleave by
/// time) — so a track that starts late, ends early or pauses is not waited for (what its decoder
/// and resampler hold is emitted first). Samples that
/// arrive for positions already mixed must be the silence its pipeline puts before its first
/// sample, and are dropped; anything else means the file stores that track further behind than
/// the slack, and the mix fails rather than emit a wrong sum.
final class AudioMixPipeline: TrackPipeline {
    private final class Input {
        let index: Int
        let timeBase: AVRational
        let volume: Float
        let fifo: AudioFifo
        /// Where the container says the track starts.
        let declaredStart: Int64
        var pipeline: AudioDecodePipeline!
        /// Samples have arrived (the first are the pipeline's own leading silence).
        var started = false
        /// Samples dropped because their positions had been mixed as silence already.
        var dropped: Int64 = 0
        /// No more samples will come (its range ended, or the input did).
        var ended = false
        /// Its decoder and resampler were emptied since its last packet (it went quiet).
        var flushed = false

        init(index: Int, timeBase: AVRational, volume: Float, channels: Int32, declaredStart: Int64) {
            self.index = index
            self.timeBase = timeBase
            self.volume = volume
            self.declaredStart = declaredStart
            fifo = AudioFifo(format: AV_SAMPLE_FMT_FLTP, channels: channels)
        }

        /// Samples that can be mixed from `position` now: what waits in the FIFO, else silence
        /// up to where the track is known to be silent.
        func available(at position: Int64, silentUntil: Int64) -> Int64 {
            if fifo.count > 0 { return Int64(fifo.count) }
            if ended { return 0 }
            return max(0, max(started ? 0 : declaredStart, silentUntil) - position)
        }
    }

    /// Why the mix stopped from inside a sink (which cannot throw).
    private enum SinkFailure {
        case memory
        case lateData(track: Int)
    }

    private var inputs: [Input] = []
    private var layout = AVChannelLayout()
    private var clock: AudioSampleClock
    private let sink: SampleSink
    private let maximumSkew: Int32
    private let interleaveSlack: Int64
    /// The window's start (µs, absolute): sample 0.
    private let windowStart: Int64
    /// The furthest packet seen of any track.
    private var frontier: Int64 = 0
    private var sinkFailure: SinkFailure?
    private var scratch: Frame?
    static let chunk: Int32 = 4096

    init(
        sampleRate: Int32,
        channels: Int32,
        maximumSkew: Int32,
        interleaveSlack: Int64,
        windowStart: Int64,
        sink: @escaping SampleSink
    ) {
        av_channel_layout_default(&layout, channels)
        clock = AudioSampleClock(rate: sampleRate)
        self.maximumSkew = maximumSkew
        self.interleaveSlack = interleaveSlack
        self.windowStart = windowStart
        self.sink = sink
    }

    deinit { av_channel_layout_uninit(&layout) }

    /// Where a track that shows no sample is known to be silent until.
    private var silentUntil: Int64 { frontier - interleaveSlack }

    /// Adds a track; `make` builds its decode pipeline around the sink that fills its FIFO.
    func addTrack(
        index: Int,
        timeBase: AVRational,
        volume: Float,
        declaredStart: Int64,
        make: (@escaping SampleSink) throws(MediaError) -> AudioDecodePipeline
    ) throws(MediaError) {
        let input = Input(
            index: index,
            timeBase: timeBase,
            volume: volume,
            channels: layout.nb_channels,
            declaredStart: declaredStart
        )
        input.pipeline = try make { [unowned self, unowned input] sample in
            receive(sample, into: input)
        }
        inputs.append(input)
    }

    /// Queues a track's samples; drops those whose positions were mixed as silence already
    /// (allowed only within its leading silence).
    private func receive(_ sample: SampleBuffer, into input: Input) -> Bool {
        guard case .audio(let frame) = sample.payload else { return true }
        let overlap = min(Int64(frame.sampleCount), max(0, clock.emitted - sample.pts))
        do { try input.fifo.write(frame) } catch {
            sinkFailure = .memory
            return false
        }
        input.started = true
        if overlap > 0 {
            // Only when its FIFO was empty (silence is mixed for it only then): the head is this frame.
            input.fifo.drain(Int32(overlap))
            input.dropped += overlap
            if input.dropped > input.pipeline.leadingSilence ?? 0 {
                sinkFailure = .lateData(track: input.index)
                return false
            }
        }
        return true
    }

    func consume(_ packet: Packet) throws(MediaError) -> Bool {
        if let input = inputs.first(where: { $0.index == packet.streamIndex }), !input.ended {
            let timestamp = packet.pts != noPTS ? packet.pts : packet.decodeTimestamp
            if timestamp != noPTS {
                let time = av_rescale_q(timestamp, input.timeBase, microsecondBase) - windowStart
                frontier = max(frontier, av_rescale_q(time, microsecondBase, AVRational(num: 1, den: clock.rate)))
            }
            input.flushed = false
            if try !run({ () throws(MediaError) in try input.pipeline.consume(packet) }) { try end(input) }
            try mix()
        }
        return inputs.contains { !$0.ended }
    }

    func finish() throws(MediaError) {
        for input in inputs where !input.ended { try end(input) }
        try mix()
    }

    private func end(_ input: Input) throws(MediaError) {
        input.ended = true
        try run { () throws(MediaError) in try input.pipeline.finish() }
    }

    /// Runs a pipeline step, turning a stop from inside the sink into its error.
    private func run<T>(_ step: () throws(MediaError) -> T) throws(MediaError) -> T {
        do { return try step() } catch {
            switch sinkFailure {
            case .memory?:
                throw MediaError(.internalError, "out of memory while mixing audio tracks")
            case .lateData(let track)?:
                throw MediaError(
                    .inputUnsupported,
                    "audio track \(track) is stored more than \(AssetReaderAudioMixOutput.interleaveSlack) s after the other tracks of the same time in the file; it cannot be mixed while reading (read one track instead)"
                )
            case nil:
                throw error
            }
        }
    }

    /// Emits the sum of what every running track has (all of what is left once all ended).
    private func mix() throws(MediaError) {
        while true {
            let running = inputs.filter { !$0.ended }
            let (position, silentUntil) = (clock.emitted, silentUntil)
            // A track gone quiet (ended in the file, or pausing) is about to be mixed as silence:
            // first get what its decoder and resampler still hold, which belongs before that.
            for input in running
            where input.started && !input.flushed && input.fifo.count == 0 && silentUntil > position {
                input.flushed = true
                try run { () throws(MediaError) in try input.pipeline.emitHeldSamples() }
            }
            let available =
                running.isEmpty
                ? Int64(inputs.map(\.fifo.count).max() ?? 0)
                : running.map { $0.available(at: position, silentUntil: silentUntil) }.min()!
            guard available > 0 else {
                try checkSkew(running)
                return
            }
            try emitSum(of: Int32(min(available, Int64(Self.chunk))))
        }
    }

    /// One track's packets far behind the others' in the file: fail rather than buffer it all.
    private func checkSkew(_ running: [Input]) throws(MediaError) {
        let (position, silentUntil) = (clock.emitted, silentUntil)
        guard let ahead = running.max(by: { $0.fifo.count < $1.fifo.count }), ahead.fifo.count > maximumSkew,
            let behind = running.first(where: { $0.available(at: position, silentUntil: silentUntil) == 0 })
        else { return }
        throw MediaError(
            .inputUnsupported,
            "audio tracks \(ahead.index) and \(behind.index) are stored too far apart in the file to mix while reading (more than \(AssetReaderAudioMixOutput.maximumSkew) s); read one track instead"
        )
    }

    private func emitSum(of count: Int32) throws(MediaError) {
        let channels = Int(layout.nb_channels)
        let sum: Frame
        let part: Frame
        do {
            sum = try Frame.audio(samples: count, format: AV_SAMPLE_FMT_FLTP, layout: &layout, sampleRate: clock.rate)
            // One scratch frame for reading each track's share, kept (the sum is handed on).
            part =
                try scratch
                ?? Frame.audio(samples: Self.chunk, format: AV_SAMPLE_FMT_FLTP, layout: &layout, sampleRate: clock.rate)
            scratch = part
        } catch {
            throw MediaError(.internalError, "out of memory while mixing audio tracks", detail: "\(error)")
        }
        sum.withPlanes { planes in
            _ = av_samples_set_silence(planes, 0, count, Int32(channels), AV_SAMPLE_FMT_FLTP)
        }
        for input in inputs {
            let taken = min(count, input.fifo.count)  // the rest of a short track is silence
            guard taken > 0 else { continue }
            do { try input.fifo.read(into: part, count: taken) } catch {
                throw MediaError(.internalError, "mixing audio tracks failed", detail: "\(error)")
            }
            sum.withPlanes { total in
                part.withPlanes { planes in
                    for channel in 0..<channels {
                        let into = UnsafeMutableRawPointer(total[channel]!).assumingMemoryBound(to: Float.self)
                        let from = UnsafeRawPointer(planes[channel]!).assumingMemoryBound(to: Float.self)
                        for sample in 0..<Int(taken) { into[sample] += from[sample] * input.volume }
                    }
                }
            }
        }
        sum.sampleCount = count
        try clock.emit(sum, to: sink)
    }
}
