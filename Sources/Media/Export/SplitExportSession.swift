import Foundation
import JobctlCore
import Synchronization

/// `jobctl export --split`: a split export in one process, the driver of `SplitRun` that makes
/// the parts with a pool of its own: the audio and up to `parallel` segments encode at once
/// into `scratch`, then the run's join proves and writes the output (a refused segment is
/// encoded again, up to 3 times).
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

    /// Plans, encodes and joins (`SplitRun`, this session making the parts); the output is
    /// shown only when the join proved it. A plan of one segment is exported whole.
    public func export() async throws -> ExportResult {
        if let reason = SplitExport.unsplittable(preset, format: format) {
            throw MediaError(.presetIncompatible, "--split cannot be used: \(reason)")
        }
        // Before anything is planned or encoded (the scratch beside it would otherwise make a
        // missing directory, and the join find the problem last).
        try OutputDestination.checkDirectory(of: outputPath)
        guard
            let run = try SplitRun.plan(
                asset,
                range: timeRange,
                segmentLength: segmentLength,
                preset: preset,
                format: format
            )
        else {
            let whole = ExportSession(
                asset: asset,
                preset: preset,
                outputPath: outputPath,
                format: format,
                timeRange: timeRange,
                temporaryTag: temporaryTag
            )
            return try await self.run(whole)
        }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let video = run.video
        let total = video.reduce(0) { $0 + Double($1.range.duration ?? 0) }
        done.withLock { $0 = (0, total * (run.audio != nil ? 1.1 : 1)) }
        // The audio first (it is the longest single piece), then the segments, `parallel` at once.
        let made = try await withThrowingTaskGroup(of: (Int, SplitRun.Made).self) { group in
            var next = run.parts.makeIterator()
            var made = Array(repeating: SplitRun.Made(), count: video.count)
            for _ in 0..<parallel {
                guard let planned = next.next() else { break }
                group.addTask { (planned.part.index, try await self.make(planned, of: run)) }
            }
            while let (index, part) = try await group.next() {
                if index >= 0 { made[index] = part }
                if let planned = next.next() {
                    group.addTask { (planned.part.index, try await self.make(planned, of: run)) }
                }
            }
            return made
        }
        let joined = try await run.join(
            in: scratch,
            made: made,
            destination: outputPath,
            temporaryTag: temporaryTag,
            limits: asset.limits,
            isCancelled: { self.cancelled.load(ordering: .acquiring) },
            hold: { output in try output.commit() },
            remake: { index in
                try? FileManager.default.removeItem(atPath: run.path(of: video[index].part, in: scratch))
                return try await make(video[index], of: run)
            }
        )
        let source = asset.location
        return try run.result(
            of: joined,
            file: outputPath,
            source: { source },
            sources: (asset.primaryVideoTrack?.index ?? 0, asset.audioTracks.first?.index ?? 0),
            limits: asset.limits
        )
    }

    /// One part into the scratch directory; for a video segment, the frames its encode was
    /// given and the scores of its first and last frames.
    private func make(_ planned: SplitRun.Planned, of run: SplitRun) async throws -> SplitRun.Made {
        if cancelled.load(ordering: .acquiring) { throw MediaError.cancelled() }
        // The CPUs shared among the sessions running at once (each x264 would otherwise start
        // threads for every CPU: 18 % slower on 2 CPUs, docs/benchmarks.md).
        let threads = max(1, ProcessInfo.processInfo.activeProcessorCount / parallel)
        let encode = run.encode(planned, asset: asset, videoThreads: threads)
        let path = run.path(of: planned.part, in: scratch)
        // Each session reads with an asset of its own (an asset's demuxer is one position).
        let session = encode.session(
            asset: try Asset(location: asset.location, limits: asset.limits),
            preset: preset,
            format: format,
            outputPath: path
        )
        let result = try await self.run(session)
        let range = planned.range
        done.withLock { $0.finished += Double(range.duration ?? 0) * (planned.part.medium == .audio ? 0.1 : 1) }
        guard planned.part.medium == .video, let cut = encode.cut else { return SplitRun.Made() }
        return SplitRun.Made(
            frames: result.tracks.first { $0.mediaType == .video }?.frames.map { Int($0) },
            edges: SeamQuality.edges(
                ofSegment: path,
                source: asset.location,
                encoded: encode.encoded,
                cut: cut,
                first: planned.part.index == 0,
                last: planned.part.last ?? (planned.part.index == run.video.count - 1),
                limits: asset.limits
            )
        )
    }

    private func run(_ session: ExportSession) async throws -> ExportResult {
        let key = ObjectIdentifier(session)
        running.withLock { $0[key] = session }
        defer { _ = running.withLock { $0.removeValue(forKey: key) } }
        if cancelled.load(ordering: .acquiring) { session.cancel() }
        return try await session.export()
    }
}
