import Foundation
import JobctlCore
import Synchronization

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
    /// The seam scores each segment's encode measured, and the frames it was given (the plan's
    /// unless the source is damaged), by segment index.
    private let edges = Mutex<[Int: SegmentEdges]>([:])
    private let encodedFrames = Mutex<[Int: Int]>([:])

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
        if let reason = SplitExport.unsplittable(preset, format: format) {
            throw MediaError(.presetIncompatible, "--split cannot be used: \(reason)")
        }
        // Before anything is planned or encoded (the scratch beside it would otherwise make a
        // missing directory, and the join find the problem last).
        try OutputDestination.checkDirectory(of: outputPath)
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
        let resolved = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        let parts = SplitExport.parts(
            plan,
            ranges: ranges,
            range: timeRange,
            resolved: resolved,
            origin: asset.startTime,
            audio: preset.audio != nil && !asset.audioTracks.isEmpty
        )
        let (scratch, format) = (self.scratch, self.format)
        let path: @Sendable (SplitExport.Part) -> String = { part in
            (scratch as NSString).appendingPathComponent(part.fileName(for: format))
        }
        let audioPath = parts.first { $0.part.medium == .audio }.map { path($0.part) }
        let video = parts.filter { $0.part.medium == .video }
        let total = ranges.reduce(0) { $0 + Double($1.duration ?? 0) }
        done.withLock { $0 = (0, total * (audioPath != nil ? 1.1 : 1)) }
        // The audio first (it is the longest single piece), then the segments, `parallel` at once.
        let count = video.count
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = parts.makeIterator()
            for _ in 0..<parallel {
                guard let (part, range) = next.next() else { break }
                group.addTask { try await self.encode(part, range: range, to: path(part), count: count) }
            }
            while try await group.next() != nil {
                if let (part, range) = next.next() {
                    group.addTask { try await self.encode(part, range: range, to: path(part), count: count) }
                }
            }
        }
        let frames = encodedFrames.withLock { $0 }
        var proved = ProvedJoin(
            video.map { part, range in
                SegmentJoin.Segment(part, path: path(part), frames: frames[part.index], range: range, preset: preset)
            }
        )
        let joined: SegmentJoin.Joined
        do {
            joined = try await proved.run(
                isCancelled: { cancelled.load(ordering: .acquiring) },
                join: { parts in
                    let finished = try SegmentJoin.join(
                        parts,
                        audio: audioPath,
                        destination: outputPath,
                        format: format,
                        temporaryTag: temporaryTag,
                        limits: asset.limits,
                        isCancelled: { self.cancelled.load(ordering: .acquiring) }
                    )
                    let joined = finished.joined
                    try finished.takeOutput().commit()
                    return joined
                },
                remake: { index in
                    let (part, range) = video[index]
                    try? FileManager.default.removeItem(atPath: path(part))
                    try await encode(part, range: range, to: path(part), count: count)
                    return encodedFrames.withLock { $0[index] }
                }
            )
        } catch let refused as ProvedJoin.Refused {
            throw MediaError(.encodeFailed, refused.description)
        }
        var reports = SplitExport.reports(plan, joined: joined)
        for index in reports.indices where proved.reencodes[index] > 0 {
            reports[index].reencoded = proved.reencodes[index]
        }
        let start = resolved.start
        let measured = edges.withLock { $0 }
        SplitExport.measureSeams(
            &reports,
            output: outputPath,
            source: asset.location,
            rangeStart: start,
            joined: joined,
            limits: asset.limits,
            edges: plan.segments.indices.map { measured[$0] }
        )
        return try result(joined, reports: reports)
    }

    /// One part into the scratch directory; for a video segment (one of `count`), the scores
    /// of its first and last frames too.
    private func encode(_ part: SplitExport.Part, range: TimeRange, to path: String, count: Int) async throws {
        if cancelled.load(ordering: .acquiring) { throw MediaError.cancelled() }
        // The CPUs shared among the sessions running at once (each x264 would otherwise start
        // threads for every CPU: 18 % slower on 2 CPUs, docs/benchmarks.md).
        let threads = max(1, ProcessInfo.processInfo.activeProcessorCount / parallel)
        let encode = PartEncode(
            part.medium,
            range: range,
            first: part.index == 0,
            asset: asset,
            preset: preset,
            videoThreads: threads
        )
        // Each session reads with an asset of its own (an asset's demuxer is one position).
        let session = encode.session(
            asset: try Asset(location: asset.location, limits: asset.limits),
            preset: preset,
            format: format,
            outputPath: path
        )
        let result = try await run(session)
        if part.medium == .video, let cut = encode.cut {
            if let frames = result.tracks.first(where: { $0.mediaType == .video })?.frames {
                encodedFrames.withLock { $0[part.index] = Int(frames) }
            }
            let scores = SeamQuality.edges(
                ofSegment: path,
                source: asset.location,
                encoded: encode.encoded,
                cut: cut,
                first: part.index == 0,
                last: part.index == count - 1,
                limits: asset.limits
            )
            edges.withLock { $0[part.index] = scores }
        }
        done.withLock { $0.finished += Double(range.duration ?? 0) * (part.medium == .audio ? 0.1 : 1) }
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
