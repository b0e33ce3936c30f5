import CFFmpeg

/// Reads several audio tracks as one (`AVAssetReaderAudioMixOutput`): each is decoded and
/// converted to `sampleRate` and `channels` as a track output would be, placed on the range's
/// timeline (a track that starts later is preceded by silence, so all stay in sync), scaled by
/// its volume and summed. The sum is not clipped: float samples may exceed ±1 where loud tracks
/// add up, and whoever makes integers of them (an encoder, a waveform) clips.
///
/// The tracks come through the demuxer in file order, so they are mixed as they arrive; each
/// waits in a small FIFO for the others. A file that stores its tracks more than
/// `maximumSkew` apart (one track's packets after all of another's) fails with
/// `input_unsupported` instead of buffering it whole.
public final class AssetReaderAudioMixOutput: AssetReaderOutput, @unchecked Sendable {
    public let sampleRate: Int
    public let channels: Int
    /// The gain of each track, by track index (AVAudioMix's input parameters); 1 when absent.
    public let volumes: [Int: Float]

    /// How far apart (in seconds of audio) the tracks may be stored in the file.
    static let maximumSkew = 30

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
            maximumSkew: Int32(Self.maximumSkew * sampleRate)
        ) { [unowned self] in deliver($0) }
        for track in tracks {
            try mix.addTrack(
                index: track.index,
                volume: volumes[track.index] ?? 1
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
final class AudioMixPipeline: TrackPipeline {
    private final class Input {
        let index: Int
        let volume: Float
        let fifo: AudioFifo
        var pipeline: AudioDecodePipeline!
        /// No more samples will come (its range ended, or the input did).
        var ended = false

        init(index: Int, volume: Float, channels: Int32) {
            self.index = index
            self.volume = volume
            fifo = AudioFifo(format: AV_SAMPLE_FMT_FLTP, channels: channels)
        }
    }

    private var inputs: [Input] = []
    private var layout = AVChannelLayout()
    private var clock: AudioSampleClock
    private let sink: SampleSink
    private let maximumSkew: Int32
    private var fifoFailure = false
    static let chunk: Int32 = 4096

    init(sampleRate: Int32, channels: Int32, maximumSkew: Int32, sink: @escaping SampleSink) {
        av_channel_layout_default(&layout, channels)
        clock = AudioSampleClock(rate: sampleRate)
        self.maximumSkew = maximumSkew
        self.sink = sink
    }

    deinit { av_channel_layout_uninit(&layout) }

    /// Adds a track; `make` builds its decode pipeline around the sink that fills its FIFO.
    func addTrack(
        index: Int,
        volume: Float,
        make: (@escaping SampleSink) throws(MediaError) -> AudioDecodePipeline
    ) throws(MediaError) {
        let input = Input(index: index, volume: volume, channels: layout.nb_channels)
        input.pipeline = try make { [unowned self, unowned input] sample in
            guard case .audio(let frame) = sample.payload else { return true }
            do { try input.fifo.write(frame) } catch {
                fifoFailure = true
                return false
            }
            return true
        }
        inputs.append(input)
    }

    func consume(_ packet: Packet) throws(MediaError) -> Bool {
        if let input = inputs.first(where: { $0.index == packet.streamIndex }), !input.ended {
            if try !feed(input, packet) { try end(input) }
            try mix()
        }
        return inputs.contains { !$0.ended }
    }

    func finish() throws(MediaError) {
        for input in inputs where !input.ended { try end(input) }
        try mix()
    }

    /// Feeds `input` the packet; `false` once its range ended.
    private func feed(_ input: Input, _ packet: Packet) throws(MediaError) -> Bool {
        do { return try input.pipeline.consume(packet) } catch {
            throw fifoFailure ? MediaError(.internalError, "out of memory while mixing audio tracks") : error
        }
    }

    private func end(_ input: Input) throws(MediaError) {
        input.ended = true
        try input.pipeline.finish()
    }

    /// Emits the sum of what every running track has (all of what is left once all ended).
    private func mix() throws(MediaError) {
        while true {
            let running = inputs.filter { !$0.ended }
            let available =
                running.isEmpty
                ? (inputs.map(\.fifo.count).max() ?? 0)
                : running.map(\.fifo.count).min()!
            guard available > 0 else {
                try checkSkew(running)
                return
            }
            try emitSum(of: min(available, Self.chunk))
        }
    }

    private func checkSkew(_ running: [Input]) throws(MediaError) {
        guard let ahead = running.max(by: { $0.fifo.count < $1.fifo.count }), ahead.fifo.count > maximumSkew,
            let behind = running.first(where: { $0.fifo.count == 0 })
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
            part = try Frame.audio(samples: count, format: AV_SAMPLE_FMT_FLTP, layout: &layout, sampleRate: clock.rate)
        } catch {
            throw MediaError(.internalError, "out of memory while mixing audio tracks", detail: "\(error)")
        }
        sum.withPlanes { planes in
            _ = av_samples_set_silence(planes, 0, count, Int32(channels), AV_SAMPLE_FMT_FLTP)
        }
        for input in inputs {
            let taken = min(count, input.fifo.count)
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
