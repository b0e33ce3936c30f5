import CFFmpeg
import JobctlCore
import Synchronization

/// Encodes (or copies) one track into an asset writer (`AVAssetWriterInput`).
///
/// One thread appends to an input; `append` encodes synchronously and hands the packets to the
/// writer's muxer. Counters and status can be read from any thread.
///
/// Sendable: its configuration is immutable; counters and status are in a mutex; the engine
/// is used only by the one appending thread.
public final class AssetWriterInput: @unchecked Sendable {
    public enum Settings: Sendable {
        /// H.264/H.265 pictures at `size` (square pixels, `yuv420p`).
        case video(VideoEncoding)
        /// AAC at `sampleRate` with `channels` channels.
        case audio(AudioEncoding)
        /// Compressed packets of `track` copied as they are.
        case passthrough(track: AssetTrack)
    }

    public struct VideoEncoding: Sendable, Hashable {
        public var codec: VideoCodec
        public var size: PictureSize
        public var bitrate: Int?
        public var crf: Int?
        public var encoderPreset: String?
        /// The source track: its time base becomes the encoder's, its frame rate and colour
        /// description are passed on.
        public var source: AssetTrack
        /// A segment of a split export: x264's `stitchable`, so that every segment's stream
        /// headers are the same and the segments join into one stream.
        public var stitchable = false
        /// A segment encoded with frames around it (`SegmentCut`): its first frame an IDR, its
        /// last a P-frame (no frame of it refers past its end), the rest only there to give the
        /// encoder's rate control and lookahead what a whole encode would have.
        public var cut: SegmentCut?
        /// The encoder's threads; `nil`: as many as the CPUs call for (x264's own count). Set
        /// when several encodes share the CPUs (`export --split-parallel`).
        public var threads: Int?
        /// A rendition of a streaming ladder: IDRs only where the caller forces them
        /// (`VideoEngine.append(_:keyframe:)`, at the same times in every rendition), no
        /// scene-cut keyframes of the encoder's own, and the bit rate held near its target
        /// (peak 1.5×, buffer 2×).
        public var alignedKeyframes = false
        /// The frame rate the encoder is told; `nil`: the source's (a rendition that drops every
        /// other frame says half).
        public var frameRate: Rational?
        /// B-frames without a pyramid: the encoder's reorder delay is one frame instead of two.
        /// A rendition at half the frame rate then shows its first picture at the same time as
        /// the full-rate ones (fragmented MP4 starts decoding at 0, so the first picture is
        /// shown one delay later).
        public var shallowReorder = false
        /// What the encode does with the source's colour: its tags passed on (`standard`),
        /// SDR BT.709 tags on tone-mapped pictures, or HDR kept (10-bit; for PQ, the source's
        /// mastering display and light level written into the stream's SEI).
        public var color: ColorPath = .standard

        public init(
            codec: VideoCodec,
            size: PictureSize,
            bitrate: Int? = nil,
            crf: Int? = nil,
            encoderPreset: String? = nil,
            source: AssetTrack
        ) {
            self.codec = codec
            self.size = size
            self.bitrate = bitrate
            self.crf = crf
            self.encoderPreset = encoderPreset
            self.source = source
        }
    }

    public struct AudioEncoding: Sendable, Hashable {
        public var sampleRate: Int
        public var channels: Int
        public var bitrate: Int?
        public var source: AssetTrack

        public init(sampleRate: Int, channels: Int, bitrate: Int?, source: AssetTrack) {
            self.sampleRate = sampleRate
            self.channels = channels
            self.bitrate = bitrate
            self.source = source
        }
    }

    public let settings: Settings
    private let state = Mutex(State())
    private var engine: Engine?

    private struct State {
        var status: Status = .unknown
        var written: Int64 = 0
        var endMicroseconds: Int64 = 0
    }

    public init(settings: Settings) {
        self.settings = settings
    }

    public var mediaType: MediaType {
        switch settings {
        case .video: .video
        case .audio: .audio
        case .passthrough(let track): track.mediaType
        }
    }

    public var status: Status { state.withLock { $0.status } }
    /// Frames (video), samples (audio) or packets (passthrough) appended.
    public var samplesWritten: Int64 { state.withLock { $0.written } }
    /// Where the appended media ends, in microseconds from the export's start.
    public var endMicroseconds: Int64 { state.withLock { $0.endMicroseconds } }
    /// The output stream's index in the file, once added to a writer.
    public private(set) var streamIndex: Int?
    /// The codec written (`h264`, `aac`, or the copied codec).
    public private(set) var codecName: String?
    /// A video segment's frames (`VideoEncoding.cut`) given to the encoder between its start
    /// and its end, once the input is finished; `nil` for any other encode.
    public var segmentFrames: Int? {
        guard case .video(let encoding) = settings, encoding.cut != nil else { return nil }
        return (engine as? VideoEngine)?.segmentFrames
    }

    /// Whether the input accepts samples: the writer is writing and the input is not finished.
    public var isReadyForMoreMediaData: Bool {
        guard let engine, engine.writer?.status == .reading else { return false }
        return status == .reading
    }

    /// Encodes `sample` and writes the packets.
    public func append(_ sample: SampleBuffer) throws(MediaError) {
        guard let engine, isReadyForMoreMediaData else {
            throw engineError ?? MediaError(.internalError, "append to an input that is not ready for more media data")
        }
        do {
            // What the encoder still holds comes out with a later sample (or at the end): under
            // that one's sequence, never below what was promised.
            engine.sequence = sample.sequence
            if case .marker = sample.payload { return try engine.advance(to: sample.sequence) }
            try engine.append(sample)
        } catch {
            markFailed()
            throw error
        }
        state.withLock {
            $0.written += sample.count
            $0.endMicroseconds = max($0.endMicroseconds, sample.endMicroseconds)
        }
    }

    /// No more samples: drains the encoder.
    public func markAsFinished() throws(MediaError) {
        guard let engine, status == .reading else { return }
        do {
            try engine.finish()
            try engine.advance(to: nil)
        } catch {
            markFailed()
            throw error
        }
        state.withLock { $0.status = .completed }
    }

    private var engineError: MediaError? { engine?.writer?.error }

    private func markFailed() { state.withLock { $0.status = .failed } }

    // MARK: Writer side

    /// Creates the encoder and the output stream (before the header is written).
    func attach(to writer: AssetWriter, file: OutputFile, asset: Asset?) throws(MediaError) {
        let engine: Engine
        switch settings {
        case .video(let encoding): engine = try VideoEngine(encoding: encoding, file: file)
        case .audio(let encoding): engine = try AudioEngine(encoding: encoding, file: file)
        case .passthrough(let track):
            guard let asset else { throw MediaError(.internalError, "a passthrough input needs its source asset") }
            engine = try CopyEngine(track: track, asset: asset, file: file)
        }
        engine.writer = writer
        self.engine = engine
        streamIndex = engine.streamIndex
        codecName = engine.codecName
    }

    func setStatus(_ status: Status) {
        state.withLock { if !$0.status.isTerminal { $0.status = status } }
    }
}

/// Where a segment of a split export lies in its encode (µs from the encode's start): frames
/// before `start` (pre-roll) and from `end` on (post-roll) are encoded and then dropped by the
/// join.
public struct SegmentCut: Sendable, Hashable {
    public var start: Int64
    public var end: Int64
    /// Where the segment's time starts: `start`, or a few µs after it when `start` is moved
    /// under it to catch its first frame (the join places the segment's frames from here).
    public var origin: Int64

    public init(start: Int64, end: Int64, origin: Int64? = nil) {
        self.start = start
        self.end = end
        self.origin = origin ?? start
    }
}
