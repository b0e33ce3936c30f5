import Foundation
import JobctlCore
import Synchronization

/// One segment of a split export as the result reports it.
public struct SegmentReport: Sendable, Codable, Hashable {
    public var index: Int
    /// The segment's first and last frame, counted from the export's first frame.
    public var firstFrame: Int
    public var lastFrame: Int
    /// Where it starts in the output and how long it is (seconds).
    public var start: Double
    public var duration: Double
    public var bytes: Int64
    /// Who encoded it (a worker; `nil` in one process) and how fast (frames per second).
    public var worker: String?
    public var fps: Double?
    /// Times it was encoded again because the join's proof refused it.
    public var reencoded: Int?
    /// The cut before it (all but the first segment): the PSNR (luma, dB) of the frame before
    /// the cut and of the frame at it, against the source (`SeamQuality`).
    public var seamPSNR: [Double]?

    public init(
        index: Int,
        firstFrame: Int,
        lastFrame: Int,
        start: Double,
        duration: Double,
        bytes: Int64,
        worker: String? = nil,
        fps: Double? = nil
    ) {
        self.index = index
        self.firstFrame = firstFrame
        self.lastFrame = lastFrame
        self.start = start
        self.duration = duration
        self.bytes = bytes
        self.worker = worker
        self.fps = fps
    }
}

/// Split-and-stitch (issue 27): where an export is cut, and the steps a queue or one process
/// runs — segments of video (`ExportPart.video`), the audio once (`ExportPart.audio`), the
/// join (`SegmentJoin`).
public enum SplitExport {
    /// Segment boundaries fall on this grid from the range's start (so the joined file is
    /// cut-ready for HLS's usual 2 s keyframe interval).
    public static let keyframeGrid: Int64 = 2_000_000
    /// How many times the join encodes a refused segment again before the job fails.
    public static let maximumReencodes = 3
    /// Media given to the encoder before a segment (all but the first, for a bitrate preset)
    /// and after it, then dropped by the join. The pre-roll is encoded: a bitrate preset's rate
    /// control settles before the segment starts (it would otherwise start each segment at a
    /// guessed quality; a constant-quality preset has nothing to settle). The post-roll fills
    /// the encoder's lookahead, so that the segment's last frames are encoded with the future a
    /// whole encode would give them (its lookahead and mbtree; without it the frame before each
    /// cut came out about 2 dB worse); it is decoded but not encoded: once every frame of the
    /// segment is out of the encoder, the rest is left in it (`VideoEngine`).
    public static let preRoll: Int64 = 2_000_000
    /// The post-roll when the frame rate is not known.
    public static let postRoll: Int64 = 2_500_000

    /// The post-roll that holds the encoder's delay, and a few frames more: x264's 40 frames
    /// of lookahead, 3 B-frames and a frame per encoder thread (`encoderThreads`; x264 starts
    /// 1.5 per CPU it may use). Longer is only decoded for nothing; shorter and the encoder is
    /// flushed, encoding the post-roll too.
    public static func postRoll(frameRate: Double?, encoderThreads: Int) -> Int64 {
        guard let frameRate, frameRate.isFinite, frameRate > 0 else { return postRoll }
        let frames = Double(45 + max(1, encoderThreads))
        return min(4_000_000, max(500_000, Int64((frames / frameRate * 1e6).rounded(.up))))
    }

    /// The post-roll for a segment of `asset` whose encoder runs `threads` threads (`nil`: x264's
    /// own count for the CPUs this process may use).
    public static func postRoll(for asset: Asset, threads: Int?) -> Int64 {
        let cpus = ProcessInfo.processInfo.activeProcessorCount
        return postRoll(frameRate: asset.primaryVideoTrack?.frameRate, encoderThreads: threads ?? max(1, cpus * 3 / 2))
    }

    /// What a video segment's encode covers, and where the segment lies in it. `first`: the
    /// range's first segment, whose first frame may be the one on screen at the start (before
    /// it): no pre-roll; nor for a preset without a bitrate target (CRF).
    public static func encode(
        _ range: TimeRange,
        first: Bool,
        preset: Preset,
        postRoll: Int64
    ) -> (range: TimeRange, cut: SegmentCut) {
        let rated = preset.video?.bitrate != nil && preset.video?.crf == nil
        let start = first || !rated ? range.start : max(0, range.start - preRoll)
        let end = range.start + (range.duration ?? 0)
        // 5 µs under each boundary: the frame at a boundary is found by its time rounded to
        // microseconds (frames are at least 11 µs apart in every real time base).
        let margin: Int64 = start == range.start ? 0 : 5
        return (
            TimeRange(start: start, duration: end + postRoll - start),
            SegmentCut(start: range.start - start - margin, end: end - start - 5, origin: range.start - start)
        )
    }

    /// The plan for exporting `range` of `asset` in segments of about `segmentLength`, with each
    /// segment's range; `nil` when it makes one segment (nothing to split).
    public static func plan(
        _ asset: Asset,
        range: TimeRange,
        segmentLength: Int64
    ) throws(MediaError) -> (plan: SplitPlan, ranges: [TimeRange])? {
        let frames = try SplitFrames.scan(asset, range: range)
        var plan = try SplitPlan.make(
            frameTimes: frames.starts,
            rangeEnd: frames.rangeEnd,
            segmentLength: segmentLength,
            keyframeInterval: keyframeGrid
        )
        // A boundary moves to a scene cut within half a grid step of it, when there is one.
        let targets = plan.segments.dropFirst().map(\.start)
        let cuts = SceneCuts.near(Array(targets), frames: frames, asset: asset, window: keyframeGrid / 2)
        if !cuts.isEmpty {
            plan = try SplitPlan.make(
                frameTimes: frames.starts,
                rangeEnd: frames.rangeEnd,
                segmentLength: segmentLength,
                keyframeInterval: keyframeGrid,
                sceneCuts: cuts
            )
        }
        guard plan.segments.count > 1 else { return nil }
        return (plan, frames.ranges(of: plan))
    }

    /// Whether a preset can be split: it encodes video (a copy cannot be cut anywhere but at
    /// the source's keyframes).
    public static func canSplit(_ preset: Preset, format: ContainerFormat) -> Bool {
        unsplittable(preset, format: format) == nil
    }

    /// Why an export with `preset` into `format` cannot be split (`nil`: it can), in words a
    /// person can act on: the one reason that applies, for `submit --split` and `export --split`.
    public static func unsplittable(_ preset: Preset, format: ContainerFormat) -> String? {
        guard format.holdsVideo else {
            return "the \(format.rawValue) container keeps no video, and a split cuts the video into segments"
        }
        guard let video = preset.video else {
            return "preset '\(preset.name)' keeps no video, and a split cuts the video into segments"
        }
        if video.codec == .copy {
            return "preset '\(preset.name)' copies its video, which can only be cut at the source's keyframes"
        }
        if preset.audio?.codec == .copy {
            return "preset '\(preset.name)' copies its audio; a split encodes the audio once, so it needs an encode"
        }
        return nil
    }

    /// The container a segment's part is written in.
    public static func container(of part: ExportPart, for format: ContainerFormat) -> ContainerFormat {
        switch (part, format) {
        case (.audio, .mov): .mov
        case (.audio, _): .m4a
        case (_, .mov): .mov
        default: .mp4
        }
    }

    /// The result of a joined file (read back from it), with the segment table. `sources`: the
    /// asset's video and audio track indices.
    public static func result(
        of path: String,
        shownAs output: String? = nil,
        joined: SegmentJoin.Joined,
        reports: [SegmentReport],
        rangeStart: Int64,
        sources: (video: Int, audio: Int),
        limits: ResourceLimits
    ) throws -> ExportResult {
        let probe = try Asset(location: path, limits: limits)
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int64) ?? nil
        let duration = Double(max(joined.duration, probe.duration ?? 0)) / 1e6
        var result = ExportResult(
            output: output ?? path,
            bytes: bytes ?? 0,
            duration: duration,
            actualRange: .init(start: Double(rangeStart) / 1e6, duration: duration),
            tracks: probe.tracks.map { track in
                ExportResult.Track(
                    index: track.index,
                    sourceIndex: track.mediaType == .video ? sources.video : sources.audio,
                    mediaType: track.mediaType,
                    codec: track.codec,
                    width: track.width,
                    height: track.height,
                    sampleRate: track.sampleRate,
                    channels: track.channels,
                    frames: track.mediaType == .video ? Int64(joined.frames) : nil,
                    samples: track.mediaType == .audio ? joined.audioSamples : nil,
                    duration: track.duration ?? duration
                )
            }
        )
        result.segments = reports
        return result
    }

    /// Adds each cut's seam quality to `reports` (left out where it cannot be measured: a
    /// seam's score is information, never a reason to fail the export). `source` is asked for
    /// only when a cut lacks a score (for `s3://`, it pre-signs a URL).
    public static func measureSeams(
        _ reports: inout [SegmentReport],
        output: String,
        source: () -> String?,
        rangeStart: Int64,
        joined: SegmentJoin.Joined,
        limits: ResourceLimits,
        edges: [SegmentEdges?] = []
    ) {
        // Each cut from the scores the segments' encoders measured (`SeamQuality.edges`);
        // those missing measured here, in the joined file.
        var missing: [Int] = []
        for index in reports.indices.dropFirst() {
            let before = index - 1 < edges.count ? edges[index - 1]?.last : nil
            let after = index < edges.count ? edges[index]?.first : nil
            if let before, let after {
                reports[index].seamPSNR = [before, after]
            } else {
                missing.append(index)
            }
        }
        guard !missing.isEmpty, let source = source(),
            let scores = try? SeamQuality.measure(
                output: output,
                source: source,
                rangeStart: rangeStart,
                cuts: missing.map { joined.segmentStarts[$0] },
                limits: limits
            )
        else { return }
        for (index, score) in zip(missing, scores) {
            if let before = score.before, let after = score.after { reports[index].seamPSNR = [before, after] }
        }
    }

    /// The segment table of a join of the segments `indices` (in order): each segment's frames
    /// as the joined file holds them (the plan's, unless a damaged source decoded to fewer).
    public static func reports(_ indices: [Int], joined: SegmentJoin.Joined) -> [SegmentReport] {
        var first = 0
        return indices.enumerated().map { position, index in
            let start = joined.segmentStarts[position]
            let end = position + 1 < joined.segmentStarts.count ? joined.segmentStarts[position + 1] : joined.duration
            defer { first += joined.framesPerSegment[position] }
            return SegmentReport(
                index: index,
                firstFrame: first,
                lastFrame: first + joined.framesPerSegment[position] - 1,
                start: Double(start) / 1e6,
                duration: Double(end - start) / 1e6,
                bytes: joined.bytesPerSegment[position]
            )
        }
    }
}

extension SplitExport {
    /// Where a ladder is cut for a fleet: chunks of whole 6 s segments (about `segmentLength`,
    /// rounded to whole segments), each starting at the first frame at or after its place on the
    /// 6 s grid, the same frame that starts a segment when one process makes the whole ladder.
    /// No scene cuts: the grid is the ladder's. `nil` when it would be one chunk, or when the
    /// frames are not all as long as each other (a variable frame rate, or a first frame cut
    /// short by where the range starts): a chunk's first pictures are shown after its encoder's
    /// reorder delay, two frames, and with frames of different lengths that delay differs from
    /// chunk to chunk, so the chunks' pictures would not line up with the whole ladder's
    /// (decision 129).
    public static func ladderPlan(
        _ asset: Asset,
        range: TimeRange,
        segmentLength: Int64
    ) throws(MediaError) -> (plan: SplitPlan, ranges: [TimeRange], rangeStart: Int64)? {
        let frames = try SplitFrames.scan(asset, range: range)
        // Every frame as long as the others, the first one included: a range that starts inside
        // a frame (or a picture that starts after the sound) shortens the first one.
        let steps = zip(frames.starts, frames.starts.dropFirst()).map { $1 - $0 }
        guard let shortest = steps.min(), let longest = steps.max(), longest - shortest <= 1_000 else { return nil }
        let plan = try SplitPlan.make(
            frameTimes: frames.starts,
            rangeEnd: frames.rangeEnd,
            segmentLength: segmentLength,
            keyframeInterval: 6_000_000
        )
        guard plan.segments.count > 1, let first = frames.starts.first else { return nil }
        return (plan, frames.ranges(of: plan), first)
    }
}
