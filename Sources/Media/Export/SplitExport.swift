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
    /// Media encoded before a segment (all but the first) and after it, then dropped by the
    /// join: the encoder's rate control settles before the segment starts (a bitrate preset
    /// would otherwise start each segment at a guessed quality), and the segment's last frames
    /// are encoded with the future a whole encode would give them (its lookahead and mbtree;
    /// without it the frame before each cut came out about 2 dB worse).
    public static let preRoll: Int64 = 2_000_000
    public static let postRoll: Int64 = 1_500_000

    /// What a video segment's encode covers, and where the segment lies in it. `first`: the
    /// range's first segment, whose first frame may be the one on screen at the start (before
    /// it): no pre-roll.
    public static func encode(_ range: TimeRange, first: Bool) -> (range: TimeRange, cut: SegmentCut) {
        let start = first ? range.start : max(0, range.start - preRoll)
        let end = range.start + (range.duration ?? 0)
        // 5 µs under each boundary: the frame at a boundary is found by its time rounded to
        // microseconds (frames are at least 11 µs apart in every real time base).
        let margin: Int64 = first ? 0 : 5
        return (
            TimeRange(start: start, duration: end + postRoll - start),
            SegmentCut(start: range.start - start - margin, end: end - start - 5)
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
        let plan = try SplitPlan.make(
            frameTimes: frames.starts,
            rangeEnd: frames.rangeEnd,
            segmentLength: segmentLength,
            keyframeInterval: keyframeGrid
        )
        guard plan.segments.count > 1 else { return nil }
        return (plan, frames.ranges(of: plan))
    }

    /// Whether a preset can be split: it encodes video (a copy cannot be cut anywhere but at
    /// the source's keyframes).
    public static func canSplit(_ preset: Preset, format: ContainerFormat) -> Bool {
        guard let video = preset.video, format.holdsVideo else { return false }
        return video.codec != .copy && preset.audio?.codec != .copy
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
    /// seam's score is information, never a reason to fail the export).
    public static func measureSeams(
        _ reports: inout [SegmentReport],
        output: String,
        source: String,
        rangeStart: Int64,
        joined: SegmentJoin.Joined,
        limits: ResourceLimits
    ) {
        let cuts = Array(joined.segmentStarts.dropFirst())
        guard
            let scores = try? SeamQuality.measure(
                output: output,
                source: source,
                rangeStart: rangeStart,
                cuts: cuts,
                limits: limits
            )
        else { return }
        for (index, score) in zip(reports.indices.dropFirst(), scores) {
            if let before = score.before, let after = score.after { reports[index].seamPSNR = [before, after] }
        }
    }

    /// The segment table of a join.
    public static func reports(_ plan: SplitPlan, joined: SegmentJoin.Joined) -> [SegmentReport] {
        plan.segments.enumerated().map { position, segment in
            let start = joined.segmentStarts[position]
            let end = position + 1 < joined.segmentStarts.count ? joined.segmentStarts[position + 1] : joined.duration
            return SegmentReport(
                index: segment.index,
                firstFrame: segment.frames.lowerBound,
                lastFrame: segment.frames.upperBound - 1,
                start: Double(start) / 1e6,
                duration: Double(end - start) / 1e6,
                bytes: joined.bytesPerSegment[position]
            )
        }
    }
}

/// `jobctl export --split`: a split export in one process, with a pool of its own: the audio
/// and up to `parallel` segments encode at once into `scratch`, then the join proves and
/// writes the output (a refused segment is encoded again, up to 3 times).
public final class SplitExportSession: Sendable {
    public let asset: Asset
    public let preset: Preset
    public let outputPath: String
    public let format: ContainerFormat
    public let timeRange: TimeRange
    public let segmentLength: Int64
    public let parallel: Int
    public let scratch: String
    public let temporaryTag: String?
    private let running = Mutex<[ObjectIdentifier: ExportSession]>([:])
    private let done = Mutex<(finished: Double, total: Double)>((0, 1))
    private let cancelled = Atomic<Bool>(false)

    public init(
        asset: Asset,
        preset: Preset,
        outputPath: String,
        format: ContainerFormat? = nil,
        timeRange: TimeRange = .all,
        segmentLength: Int64,
        parallel: Int,
        scratch: String,
        temporaryTag: String? = nil
    ) {
        self.temporaryTag = temporaryTag
        self.asset = asset
        self.preset = preset
        self.outputPath = outputPath
        self.format = format ?? ContainerFormat(pathExtension: (outputPath as NSString).pathExtension) ?? preset.format
        self.timeRange = timeRange
        self.segmentLength = segmentLength
        self.parallel = max(1, parallel)
        self.scratch = scratch
    }

    /// 0…1: the segments and audio finished, plus those running, by their share of the range.
    public var progress: Double {
        let sessions = running.withLock { Array($0.values) }
        let (finished, total) = done.withLock { $0 }
        let partial = sessions.reduce(0.0) { sum, session in
            sum + session.progress * Double(session.timeRange.duration ?? 0)
        }
        return min(0.999, (finished + partial) / max(total, 1))
    }

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
        for session in running.withLock({ Array($0.values) }) { session.cancel() }
    }

    /// Plans, encodes and joins; the output is shown only when the join proved it. A plan of
    /// one segment is exported whole.
    public func export() async throws -> ExportResult {
        guard SplitExport.canSplit(preset, format: format) else {
            throw MediaError(.presetIncompatible, "preset '\(preset.name)' copies its video: a split needs an encode")
        }
        guard let (plan, ranges) = try SplitExport.plan(asset, range: timeRange, segmentLength: segmentLength) else {
            let whole = ExportSession(
                asset: asset,
                preset: preset,
                outputPath: outputPath,
                format: format,
                timeRange: timeRange,
                temporaryTag: temporaryTag
            )
            return try await run(whole)
        }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let audioPath = (scratch as NSString).appendingPathComponent(
            "audio.\(SplitExport.container(of: .audio, for: format).fileExtension)"
        )
        let hasAudio = preset.audio != nil && !asset.audioTracks.isEmpty
        let segmentPaths = plan.segments.map { segment in
            (scratch as NSString).appendingPathComponent(
                String(
                    format: "segment-%05d.%@",
                    segment.index,
                    SplitExport.container(of: .video, for: format).fileExtension
                )
            )
        }
        let total = ranges.reduce(0) { $0 + Double($1.duration ?? 0) }
        done.withLock { $0 = (0, total * (hasAudio ? 1.1 : 1)) }
        // The audio first (it is the longest single piece), then the segments, `parallel` at once.
        var work: [(ExportPart, TimeRange, String)] = hasAudio ? [(.audio, timeRange, audioPath)] : []
        work += zip(ranges, segmentPaths).map { (.video, $0, $1) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = work.makeIterator()
            for _ in 0..<parallel {
                guard let (part, range, path) = next.next() else { break }
                group.addTask { try await self.encode(part, range: range, to: path) }
            }
            while try await group.next() != nil {
                if let (part, range, path) = next.next() {
                    group.addTask { try await self.encode(part, range: range, to: path) }
                }
            }
        }
        var reencodes = Array(repeating: 0, count: plan.segments.count)
        while true {
            if cancelled.load(ordering: .acquiring) { throw MediaError.cancelled() }
            do {
                let finished = try SegmentJoin.join(
                    plan.segments.indices.map { index in
                        SegmentJoin.Segment(
                            path: segmentPaths[index],
                            frames: plan.segments[index].frameCount,
                            start: asset.startTime + ranges[index].start,
                            end: asset.startTime + ranges[index].start + (ranges[index].duration ?? 0),
                            from: SplitExport.encode(ranges[index], first: index == 0).cut.start
                        )
                    },
                    audio: hasAudio ? audioPath : nil,
                    destination: outputPath,
                    format: format,
                    temporaryTag: temporaryTag,
                    limits: asset.limits,
                    isCancelled: { self.cancelled.load(ordering: .acquiring) }
                )
                let joined = finished.joined
                try finished.takeOutput().commit()
                var reports = SplitExport.reports(plan, joined: joined)
                for index in reports.indices where reencodes[index] > 0 { reports[index].reencoded = reencodes[index] }
                let start = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName).start
                SplitExport.measureSeams(
                    &reports,
                    output: outputPath,
                    source: asset.location,
                    rangeStart: start,
                    joined: joined,
                    limits: asset.limits
                )
                return try result(joined, reports: reports)
            } catch let mismatch as SegmentJoin.Mismatch {
                reencodes[mismatch.segment] += 1
                guard reencodes[mismatch.segment] <= SplitExport.maximumReencodes else {
                    throw MediaError(
                        .encodeFailed,
                        "the split export's \(mismatch) after \(SplitExport.maximumReencodes) new encodes"
                    )
                }
                try? FileManager.default.removeItem(atPath: segmentPaths[mismatch.segment])
                try await encode(.video, range: ranges[mismatch.segment], to: segmentPaths[mismatch.segment])
            }
        }
    }

    /// One part into the scratch directory.
    private func encode(_ part: ExportPart, range: TimeRange, to path: String) async throws {
        if cancelled.load(ordering: .acquiring) { throw MediaError.cancelled() }
        let first = range.start == (try? timeRange.resolved(assetDuration: asset.duration, assetName: "")).map(\.start)
        let (encoded, cut) = part == .video ? SplitExport.encode(range, first: first) : (range, nil)
        // Each session reads with an asset of its own (an asset's demuxer is one position).
        let session = ExportSession(
            asset: try Asset(location: asset.location, limits: asset.limits),
            preset: preset,
            outputPath: path,
            format: SplitExport.container(of: part, for: format),
            timeRange: encoded,
            part: part,
            cut: cut
        )
        _ = try await run(session)
        done.withLock { $0.finished += Double(range.duration ?? 0) * (part == .audio ? 0.1 : 1) }
    }

    private func run(_ session: ExportSession) async throws -> ExportResult {
        let key = ObjectIdentifier(session)
        running.withLock { $0[key] = session }
        defer { _ = running.withLock { $0.removeValue(forKey: key) } }
        if cancelled.load(ordering: .acquiring) { session.cancel() }
        return try await session.export()
    }

    /// The result of the joined file, with the segment table.
    private func result(_ joined: SegmentJoin.Joined, reports: [SegmentReport]) throws -> ExportResult {
        let resolved = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        return try SplitExport.result(
            of: outputPath,
            joined: joined,
            reports: reports,
            rangeStart: resolved.start,
            sources: (asset.primaryVideoTrack?.index ?? 0, asset.audioTracks.first?.index ?? 0),
            limits: asset.limits
        )
    }
}
