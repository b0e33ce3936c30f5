import CFFmpeg

/// Reads one track of an asset (`AVAssetReaderTrackOutput`).
///
/// With `settings`, samples are decoded and converted (video: the output size in `yuv420p`,
/// rotation applied; audio: planar float at the output rate and channel count). Without,
/// samples are the track's compressed packets (passthrough).
public final class AssetReaderTrackOutput: AssetReaderOutput, @unchecked Sendable {
    public enum Settings: Sendable, Hashable {
        /// Decoded pictures at `size` (display orientation, square pixels), their colour
        /// converted as `color` says (`ColorPath.decide`).
        case video(size: PictureSize, color: ColorPath = .standard)
        /// Decoded audio at `sampleRate` with `channels` channels.
        case audio(sampleRate: Int, channels: Int)
    }

    public var track: AssetTrack { tracks[0] }
    public let settings: Settings?

    /// How many samples the queue holds. A decoded picture is one: more slack lets the decoder
    /// run ahead of the encoder, and both libraries' peaks then add up (+30 % peak memory at 720p,
    /// no speed gain; docs/benchmarks.md). Audio frames and packets are small.
    static func sampleQueueCapacity(for settings: Settings?) -> Int {
        if case .video = settings { return 1 }
        return 8
    }

    public init(track: AssetTrack, settings: Settings?) {
        self.settings = settings
        super.init(tracks: [track], sampleQueueCapacity: Self.sampleQueueCapacity(for: settings))
    }

    override var copiesVideo: Bool { settings == nil && track.mediaType == .video }
    override var decodesAudio: Bool { settings != nil && track.mediaType == .audio }

    override func makePipeline(_ context: PipelineContext) throws(MediaError) -> TrackPipeline {
        let stream = context.stream(track)
        let sink: SampleSink = { [unowned self] in deliver($0) }
        switch settings {
        case nil:
            return CopyPipeline(stream: stream, window: context.window, sink: sink)
        case .video(let size, let color):
            return try VideoDecodePipeline(
                decoder: try context.makeDecoder(track),
                stream: stream,
                output: size,
                color: color,
                rotation: track.rotation ?? 0,
                window: context.window,
                sink: sink
            )
        case .audio(let sampleRate, let channels):
            return AudioDecodePipeline(
                decoder: try context.makeDecoder(track),
                stream: stream,
                sampleRate: sampleRate,
                channels: channels,
                window: context.window,
                sink: sink
            )
        }
    }
}
