import CFFmpeg
import Foundation
import JobctlCore

/// The join of a split export (issue 27): the segments' video packets in order, each segment's
/// timestamps moved by the length of the segments before it, and the audio (encoded once, for
/// the whole range) beside them, written like any export: a hidden temporary file, faststart,
/// shown by `PendingOutput.commit()`.
///
/// Before anything is written the segments are proved: each holds exactly the frames its plan
/// gave it, all have the same stream headers (codec, size, time base, SPS/PPS), and the joined
/// decode timestamps only increase. A segment that fails is named (`Mismatch`) so that it can
/// be encoded again.
public enum SegmentJoin {
    public struct Segment: Sendable, Hashable {
        public var path: String
        /// The frames the segment holds: those its encode was given between its start and its
        /// end (`ExportResult.Track.frames` of its export), which are the plan's unless the
        /// source is damaged there (a packet that decodes to no picture, as in the whole export).
        public var frames: Int
        /// Its range in the asset's own clock (absolute µs, the asset's start time included):
        /// its length in the joined file is exactly that of its frames in the source.
        public var start: Int64
        public var end: Int64
        /// Where in its file the segment's first frame (an IDR) is, at the earliest (µs from
        /// the file's start): frames before it are pre-roll (`SplitExport.encode`), dropped
        /// like the post-roll after the segment's end.
        public var from: Int64
        /// Where in its file the segment's time starts (µs; `SegmentCut.origin`): its first
        /// frame is there unless the source lost it (a damaged packet that decodes to no
        /// picture), and then the segment still starts there, its first picture later, as in
        /// the whole export. `nil`: at its first frame.
        public var origin: Int64?

        public init(path: String, frames: Int, start: Int64, end: Int64, from: Int64 = 0, origin: Int64? = nil) {
            self.path = path
            self.frames = frames
            self.start = start
            self.end = end
            self.from = from
            self.origin = origin
        }
    }

    /// A segment that is not what its plan says: encode it again.
    public struct Mismatch: Error, Sendable, Hashable, CustomStringConvertible {
        public var segment: Int
        public var reason: String
        public var description: String { "segment \(segment): \(reason)" }
    }

    /// What the join wrote, for the result.
    public struct Joined: Sendable {
        public var frames: Int
        public var framesPerSegment: [Int]
        public var bytesPerSegment: [Int64]
        /// Where each segment starts in the joined file (µs).
        public var segmentStarts: [Int64]
        public var duration: Int64
        public var audioSamples: Int64?
    }

    /// The joined file, not yet shown, and what it holds.
    public struct FinishedJoin: ~Copyable, Sendable {
        public let joined: Joined
        public let output: PendingOutput

        public consuming func takeOutput() -> PendingOutput { output }
    }

    /// What the proof read of one segment (its packets are read again as they are written:
    /// memory does not grow with the export).
    struct ReadSegment {
        var frames: Int
        /// The presentation timestamps in ascending order: the decode timestamps of the joined
        /// stream are made from them (`decodeTimestamps`).
        var sortedPTS: [Int64]
        /// How far a packet's presentation comes before its turn in decode order, at most
        /// (the encoder's reorder delay, in ticks).
        var delay: Int64
        var timeBase: AVRational
        var extradata: [UInt8]
        var width: Int32
        var height: Int32
        var codec: AVCodecID
        /// Where the segment starts in its file, its first frame (the IDR: later than the
        /// start when the source lost its first frames), and its length there (ticks).
        var keepFrom: Int64
        var keyframe: Int64
        var length: Int64
        var bytes: Int64
    }

    /// Checks every segment against its plan; `Mismatch` names the first that fails.
    static func read(_ segment: Segment, index: Int, limits: ResourceLimits) throws -> ReadSegment {
        let asset: Asset
        do {
            asset = try Asset(location: segment.path, limits: limits)
        } catch {
            throw Mismatch(segment: index, reason: "its file cannot be read (\(error.message))")
        }
        guard asset.tracks.count == 1, let track = asset.primaryVideoTrack else {
            throw Mismatch(segment: index, reason: "it does not hold exactly one video track")
        }
        let stream = asset.input.stream(track.index)
        let parameters = stream.pointee.codecpar.pointee
        let timeBase = stream.pointee.time_base
        let length =
            av_rescale_q_rnd(segment.end, microsecondBase, timeBase, AV_ROUND_UP)
            - av_rescale_q_rnd(segment.start, microsecondBase, timeBase, AV_ROUND_DOWN)
        var frames = 0
        var bytes: Int64 = 0
        var lastDTS: Int64?
        var presentation: [Int64] = []
        var keepFrom: Int64?
        var keyframe: Int64 = 0
        let packet = Packet()
        while true {
            let result = asset.input.read(into: packet.pointer)
            if result == AVErr.eof { break }
            guard result >= 0 else {
                throw Mismatch(segment: index, reason: "reading it failed (\(FFError.message(for: result)))")
            }
            defer { av_packet_unref(packet.pointer) }
            guard packet.pts != noPTS else { throw Mismatch(segment: index, reason: "a frame has no timestamp") }
            // Pre-roll until the segment's IDR; post-roll from its end on.
            if keepFrom == nil {
                guard packet.isKeyframe, av_rescale_q(packet.pts, timeBase, microsecondBase) >= segment.from else {
                    continue
                }
                keyframe = packet.pts
                keepFrom = start(of: segment, keyframe: packet.pts, timeBase: timeBase)
            }
            guard let keepFrom, packet.pts >= keepFrom, packet.pts - keepFrom < length else { continue }
            frames += 1
            bytes += Int64(packet.pointer.pointee.size)
            let dts = packet.decodeTimestamp
            if let lastDTS, dts <= lastDTS {
                throw Mismatch(segment: index, reason: "its decode timestamps go back (\(dts) after \(lastDTS))")
            }
            lastDTS = dts
            presentation.append(packet.pts - keepFrom)
        }
        guard let keepFrom else {
            throw Mismatch(segment: index, reason: "it has no keyframe where the segment starts")
        }
        guard frames == segment.frames else {
            throw Mismatch(segment: index, reason: "it holds \(frames) frames, its encode was given \(segment.frames)")
        }
        guard presentation.min() == keyframe - keepFrom else {
            throw Mismatch(segment: index, reason: "a frame of it comes before its first keyframe")
        }
        let sorted = presentation.sorted()
        guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw Mismatch(segment: index, reason: "two of its frames have the same timestamp")
        }
        let delay = zip(sorted, presentation).map { $0 - $1 }.max() ?? 0
        let extradata =
            parameters.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(parameters.extradata_size))) }
            ?? []
        return ReadSegment(
            frames: frames,
            sortedPTS: sorted,
            delay: max(0, delay),
            timeBase: timeBase,
            extradata: extradata,
            width: parameters.width,
            height: parameters.height,
            codec: parameters.codec_id,
            keepFrom: keepFrom,
            keyframe: keyframe,
            length: length,
            bytes: bytes
        )
    }

    /// Where `segment` starts in its file (ticks), given its first keyframe: the keyframe,
    /// unless it lies more than a tick (and the 5 µs of `SplitExport.encode`'s margin) after
    /// the segment's origin: then the source lost the segment's first frames, and the segment
    /// starts at its origin, its first picture later, as the whole export shows it.
    static func start(of segment: Segment, keyframe: Int64, timeBase: AVRational) -> Int64 {
        guard let origin = segment.origin else { return keyframe }
        let expected = av_rescale_q(origin, microsecondBase, timeBase)
        let tolerance = av_rescale_q_rnd(6, microsecondBase, timeBase, AV_ROUND_UP) + 1
        return keyframe - expected > tolerance ? expected : keyframe
    }

    /// Proves the segments and joins them with the audio into `destination` (not yet shown).
    public static func join(
        _ segments: [Segment],
        audio: String?,
        destination: String,
        format: ContainerFormat,
        temporaryTag: String?,
        limits: ResourceLimits,
        isCancelled: @Sendable () -> Bool = { false }
    ) throws -> FinishedJoin {
        precondition(!segments.isEmpty)
        var read: [ReadSegment] = []
        for (index, segment) in segments.enumerated() {
            let next = try Self.read(segment, index: index, limits: limits)
            if let first = read.first {
                var differences: [String] = []
                if next.codec != first.codec { differences.append("codec") }
                if (next.width, next.height) != (first.width, first.height) { differences.append("picture size") }
                if av_cmp_q(next.timeBase, first.timeBase) != 0 { differences.append("time base") }
                if next.extradata != first.extradata { differences.append("stream headers (SPS/PPS)") }
                if !differences.isEmpty {
                    throw Mismatch(
                        segment: index,
                        reason: "its \(differences.joined(separator: ", ")) differ from segment 0's"
                    )
                }
            }
            read.append(next)
        }
        // Each segment moved by the length of those before it. The decode timestamps are made
        // anew, the joined presentation times in order less the largest reorder delay of any
        // segment: segments encoded apart may start with different delays, and their own
        // decode timestamps would then collide at a cut (x264 with B-frames).
        var offsets: [Int64] = []
        var lengths: [Int64] = []
        var offset: Int64 = 0
        for segment in read {
            offsets.append(offset)
            guard segment.sortedPTS.last.map({ $0 < segment.length }) ?? false else {
                throw Mismatch(segment: offsets.count - 1, reason: "its frames run past its end in the plan")
            }
            offset += segment.length
            lengths.append(segment.length)
        }
        // Each frame lasts until the next one; the last of a segment until the segment's end.
        let durations = zip(read, lengths).map { segment, length in
            Dictionary(
                uniqueKeysWithValues: zip(segment.sortedPTS, segment.sortedPTS.dropFirst() + [length]).map {
                    ($0, $1 - $0)
                }
            )
        }
        let delay = read.map(\.delay).max() ?? 0
        let decodeTimestamps = zip(read, offsets).map { segment, offset in segment.sortedPTS.map { $0 + offset - delay }
        }

        let first = try Asset(location: segments[0].path, limits: limits)
        let audioPath = audio
        let audioAsset = try audio.map { try Asset(location: $0, limits: limits) }
        let writer = try AssetWriter(
            destination: destination,
            format: format,
            temporaryTag: temporaryTag,
            limits: limits
        )
        guard let videoTrack = first.primaryVideoTrack else {
            throw MediaError(.internalError, "segment 0 lost its video")
        }
        let video = AssetWriterInput(settings: .passthrough(track: videoTrack))
        try writer.add(video, copyingFrom: first)
        // Every audio track of the audio part (a source with several keeps them all, as the
        // one-process export does), each read by a demuxer of its own.
        var tracks: [(input: AssetWriterInput, source: PacketSource)] = []
        if let audioAsset, let path = audioPath {
            for track in audioAsset.audioTracks {
                let input = AssetWriterInput(settings: .passthrough(track: track))
                try writer.add(input, copyingFrom: audioAsset)
                tracks.append((input, PacketSource(try Asset(location: path, limits: limits), stream: track.index)))
            }
        }
        var audioSamples: Int64 = 0
        try writer.startWriting()
        do {
            // Interleaved by time, as a muxer wants them: whichever track is behind goes next.
            let timeBase = read[0].timeBase
            let videoSource = SegmentSource(
                segments.map(\.path),
                windows: read.map { ($0.keepFrom, $0.keyframe, $0.length) },
                offsets: offsets,
                decodeTimestamps: decodeTimestamps,
                durations: durations,
                limits: limits
            )
            var nextVideo = try videoSource.next()
            var nextAudio = try tracks.map { try $0.source.next() }
            var written = 0
            while true {
                written += 1
                if written % 64 == 0, isCancelled() { throw MediaError.cancelled() }
                // The track whose next packet decodes first (video on a tie).
                var earliest: Int? = nil  // nil: video
                var time: (Int64, AVRational)? = nextVideo.map { ($0.decodeTimestamp, timeBase) }
                for (index, packet) in nextAudio.enumerated() {
                    guard let packet else { continue }
                    let candidate = (packet.decodeTimestamp, tracks[index].source.timeBase)
                    if let current = time, av_compare_ts(candidate.0, candidate.1, current.0, current.1) >= 0 {
                        continue
                    }
                    time = candidate
                    earliest = index
                }
                guard time != nil else { break }
                if let index = earliest, let packet = nextAudio[index] {
                    if index == 0 { audioSamples += packet.duration }
                    try tracks[index].input.append(
                        SampleBuffer(
                            payload: .packet(packet),
                            pts: packet.pts != noPTS ? packet.pts : packet.dts,
                            duration: max(0, packet.duration),
                            timeBase: tracks[index].source.timeBase
                        )
                    )
                    nextAudio[index] = try tracks[index].source.next()
                } else if let packet = nextVideo {
                    try video.append(
                        SampleBuffer(
                            payload: .packet(packet),
                            pts: packet.pts,
                            duration: max(0, packet.duration),
                            timeBase: timeBase
                        )
                    )
                    nextVideo = try videoSource.next()
                }
            }
            try video.markAsFinished()
            for track in tracks { try track.input.markAsFinished() }
            _ = try writer.finishWritingWithoutCommit()
        } catch {
            writer.cancelWriting()
            throw error
        }
        let duration = offset
        let joined = Joined(
            frames: read.reduce(0) { $0 + $1.frames },
            framesPerSegment: read.map(\.frames),
            bytesPerSegment: read.map(\.bytes),
            segmentStarts: offsets.map { av_rescale_q($0, read[0].timeBase, microsecondBase) },
            duration: av_rescale_q(duration, read[0].timeBase, microsecondBase),
            audioSamples: tracks.isEmpty ? nil : audioSamples
        )
        return FinishedJoin(joined: joined, output: PendingOutput(writer: writer))
    }

    /// The samples of the first audio track of `path` as the join counts them (its packets'
    /// durations); `nil` when it holds no audio track.
    public static func audioSamples(of path: String, limits: ResourceLimits) throws(MediaError) -> Int64? {
        let asset = try Asset(location: path, limits: limits)
        guard let track = asset.audioTracks.first else { return nil }
        let source = PacketSource(asset, stream: track.index)
        var samples: Int64 = 0
        while let packet = try source.next() { samples += packet.duration }
        return samples
    }
}
