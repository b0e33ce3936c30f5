import CFFmpeg
import JobctlCore
import Synchronization

/// What an `AssetReader` delivers samples through (`AVAssetReaderOutput`): one track
/// (`AssetReaderTrackOutput`) or several audio tracks mixed (`AssetReaderAudioMixOutput`).
///
/// Each output decodes on its own thread and hands samples over through a bounded queue:
/// `copyNextSample()` blocks until one is ready, so a slow consumer holds back this output, and
/// the reader's demuxer with it (memory stays bounded whatever the input's length). The demuxer
/// hands an output the packets of all its tracks through one queue, in file order.
///
/// Sendable: `tracks` is immutable, what changes is in `state` (a mutex), and the queues are
/// thread-safe.
public class AssetReaderOutput: @unchecked Sendable {
    /// The tracks whose packets this output reads.
    public let tracks: [AssetTrack]

    static let packetQueueCapacity = 64
    /// And at most this many bytes of packets: 64 pictures of a high bit-rate 1080p source
    /// (110 Mb/s, 460 KB each) held 29 MiB ahead of the decoder, which the `ffmpeg` CLI, reading
    /// one packet at a time, does not (docs/benchmarks.md, "HLS ladder").
    static let packetQueueBytes = 4 << 20

    let packets = BlockingQueue<Packet>(capacity: packetQueueCapacity, maxWeight: packetQueueBytes) {
        Int($0.pointer.pointee.size)
    }
    let samples: BlockingQueue<SampleBuffer>
    private let state = Mutex(State())

    private struct State {
        var status: Status = .unknown
        var samplesRead: Int64 = 0
        /// The reader it was added to (set once, by `AssetReader.add`).
        weak var reader: AssetReader?
    }

    init(tracks: [AssetTrack], sampleQueueCapacity: Int) {
        precondition(!tracks.isEmpty, "an output reads at least one track")
        self.tracks = tracks
        samples = BlockingQueue(capacity: sampleQueueCapacity)
    }

    var reader: AssetReader? {
        get { state.withLock { $0.reader } }
        set { state.withLock { $0.reader = newValue } }
    }

    public var status: Status { state.withLock { $0.status } }
    /// Frames (video), samples (audio) or packets (passthrough) read so far.
    public var samplesRead: Int64 { state.withLock { $0.samplesRead } }

    /// The next sample, or `nil` when the output is finished. Throws the reader's error if
    /// reading failed, or a cancellation.
    public func copyNextSample() throws(MediaError) -> SampleBuffer? {
        if let sample = samples.pop() { return sample }
        if let reader, let error = reader.terminalError { throw error }
        return nil
    }

    // MARK: What the reader asks of an output (overridden)

    /// Passes video packets through: the reader starts at a keyframe for it.
    var copiesVideo: Bool { false }
    /// Decodes audio: the reader starts a little earlier to warm the decoder up.
    var decodesAudio: Bool { false }

    /// The pipeline that turns this output's packets into samples, on its thread.
    func makePipeline(_ context: PipelineContext) throws(MediaError) -> TrackPipeline {
        preconditionFailure("\(type(of: self)) does not make a pipeline")
    }

    // MARK: Running

    func setStatus(_ status: Status) { state.withLock { $0.status = status } }

    /// The sequence of the packet being decoded (`InputOrder`): the samples it releases carry
    /// it. Used by this output's thread only.
    private var sequence: Int64 = 0

    /// Queues a sample for `copyNextSample()`; `false` once the reading was cancelled.
    func deliver(_ sample: SampleBuffer) -> Bool {
        var sample = sample
        sample.sequence = sequence
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
                // Never back (a track the timeline guard held back comes later with its own).
                sequence = max(sequence, packet.sequence)
                if packet.isMarker {
                    guard samples.push(.marker(sequence)) else { break }
                    continue
                }
                guard try pipeline.consume(packet) else {
                    packets.cancel()  // the range ended: the demuxer drops these tracks' packets from now on
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

/// What an output needs from the reader to build its pipeline.
struct PipelineContext {
    let input: InputFile
    let window: ReadWindow
    /// A decoder for a track (`input_unsupported` when there is none).
    let makeDecoder: (AssetTrack) throws(MediaError) -> CodecDecoder

    func stream(_ track: AssetTrack) -> UnsafeMutablePointer<AVStream> { input.stream(track.index) }
}
