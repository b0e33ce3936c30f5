import CFFmpeg
import JobctlCore
import Synchronization

/// Reads one track of an asset (`AVAssetReaderTrackOutput`).
///
/// With `settings`, samples are decoded and converted (video: the output size in `yuv420p`,
/// rotation applied; audio: planar float at the output rate and channel count). Without,
/// samples are the track's compressed packets (passthrough).
///
/// Each output decodes on its own thread and hands samples over through a bounded queue:
/// `copyNextSample()` blocks until one is ready, so a slow writer input holds back this output,
/// and the reader's demuxer with it (memory stays bounded whatever the input's length).
///
/// Sendable: `track` and `settings` are immutable, what changes is in `state` (a mutex), and
/// the queues are thread-safe.
public final class AssetReaderTrackOutput: @unchecked Sendable {
    public enum Settings: Sendable, Hashable {
        /// Decoded pictures at `size` (display orientation, square pixels).
        case video(size: PictureSize)
        /// Decoded audio at `sampleRate` with `channels` channels.
        case audio(sampleRate: Int, channels: Int)
    }

    public let track: AssetTrack
    public let settings: Settings?

    /// How many samples the queue holds. A decoded picture is one: more slack lets the decoder
    /// run ahead of the encoder, and both libraries' peaks then add up (+30 % peak memory at 720p,
    /// no speed gain; docs/benchmarks.md). Audio frames and packets are small.
    static func sampleQueueCapacity(for settings: Settings?) -> Int {
        if case .video = settings { return 1 }
        return 8
    }

    static let packetQueueCapacity = 64

    let packets = BlockingQueue<Packet>(capacity: packetQueueCapacity)
    let samples: BlockingQueue<SampleBuffer>
    private let state = Mutex(State())

    private struct State {
        var status: Status = .unknown
        var samplesRead: Int64 = 0
        /// The reader it was added to (set once, by `AssetReader.add`).
        weak var reader: AssetReader?
    }

    var reader: AssetReader? {
        get { state.withLock { $0.reader } }
        set { state.withLock { $0.reader = newValue } }
    }

    public init(track: AssetTrack, settings: Settings?) {
        self.track = track
        self.settings = settings
        samples = BlockingQueue(capacity: Self.sampleQueueCapacity(for: settings))
    }

    public var status: Status { state.withLock { $0.status } }
    /// Frames (video), samples (audio) or packets (passthrough) read so far.
    public var samplesRead: Int64 { state.withLock { $0.samplesRead } }

    /// The next sample, or `nil` when the track is finished. Throws the reader's error if
    /// reading failed, or a cancellation.
    public func copyNextSample() throws(MediaError) -> SampleBuffer? {
        if let sample = samples.pop() { return sample }
        if let reader, let error = reader.terminalError { throw error }
        return nil
    }

    func setStatus(_ status: Status) { state.withLock { $0.status = status } }

    /// Queues a sample for `copyNextSample()`; `false` once the reading was cancelled.
    func deliver(_ sample: SampleBuffer) -> Bool {
        let count = sample.count
        guard samples.push(sample) else { return false }
        state.withLock { $0.samplesRead += count }
        return true
    }

    /// The decode loop, on this output's thread.
    func run(_ pipeline: TrackPipeline, reader: AssetReader) {
        defer { samples.close() }
        do {
            while let packet = packets.pop() {
                guard try pipeline.consume(packet) else {
                    packets.cancel()  // the range ended: the demuxer drops this track's packets from now on
                    break
                }
            }
            guard reader.terminalError == nil else {
                setStatus(.cancelled)
                return
            }
            try pipeline.finish()
            setStatus(.completed)
        } catch {
            if error.isCancellation {
                setStatus(.cancelled)
            } else {
                setStatus(.failed)
                reader.fail(error)
            }
        }
    }
}
