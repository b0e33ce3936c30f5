import Foundation
import JobctlCore
import Media
import Queue
import Synchronization

/// The join of a split export, in its parent's last attempt: the segments proved and joined
/// with the audio (`SegmentJoin`) into a hidden file, published like any export's (renamed
/// into place, or uploaded). A part that is not the file its child wrote (missing: a sweep or
/// a lifecycle rule; or other bytes, `SplitJob.PartRecord`) is made again here first, the
/// audio too; a segment the proof refuses is encoded again here, up to
/// `SplitExport.maximumReencodes` times, then the job fails `encode_failed`.
final class SplitJoinJob: PreparedJob {
    let job: Job
    let preset: Preset
    let format: ContainerFormat
    let context: RunContext
    let audio: Job?
    let segments: [(job: Job, segment: SplitJob.Segment)]
    /// Where the joined file goes (the output, or a staging file for an upload).
    let destination: String
    let uploadURL: String?
    private let state = Mutex<(progress: Double, cancelled: Bool, remaking: ExportSession?)>((0, false, nil))

    static func prepare(_ job: Job, preset: Preset, context: RunContext) async throws -> SplitJoinJob {
        var audio: Job?
        var segments: [(job: Job, segment: SplitJob.Segment)] = []
        for child in context.children {
            guard let segment = try child.splitSegment() else { continue }
            if segment.medium == .audio { audio = child } else { segments.append((child, segment)) }
        }
        segments.sort { $0.segment.index < $1.segment.index }
        guard !segments.isEmpty, segments.enumerated().allSatisfy({ $0.offset == $0.element.segment.index }) else {
            throw JobError(code: .internalError, message: "the join of job \(job.id) did not find its segments")
        }
        let format = try job.containerFormat(preset: preset)
        let paths = try JobPaths.resolve(job, context: context)
        let (destination, uploadURL) = try ExportJob.destination(
            of: job,
            paths: paths,
            format: format,
            preset: preset,
            context: context
        )
        ExportJob.removeLeftovers(of: job, writingTo: destination)
        return SplitJoinJob(
            job,
            preset: preset,
            format: format,
            context: context,
            audio: audio,
            segments: segments,
            destination: destination,
            uploadURL: uploadURL
        )
    }

    init(
        _ job: Job,
        preset: Preset,
        format: ContainerFormat,
        context: RunContext,
        audio: Job?,
        segments: [(job: Job, segment: SplitJob.Segment)],
        destination: String,
        uploadURL: String?
    ) {
        self.job = job
        self.preset = preset
        self.format = format
        self.context = context
        self.audio = audio
        self.segments = segments
        self.destination = destination
        self.uploadURL = uploadURL
    }

    var progress: Double { state.withLock { $0.progress } }
    var tracks: [JobTrack] { [] }
    func cancel() {
        let remaking = state.withLock { state -> ExportSession? in
            state.cancelled = true
            return state.remaking
        }
        remaking?.cancel()
    }
    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs a part's export here (a part made again), stopped by `cancel()`.
    func run(_ session: ExportSession) async throws -> ExportResult {
        let cancelled = state.withLock { state -> Bool in
            state.remaking = session
            return state.cancelled
        }
        defer { state.withLock { $0.remaking = nil } }
        if cancelled { throw MediaError.cancelled() }
        return try await session.export()
    }

    /// The split's run as the children keep it: their parts and ranges (the audio first).
    func splitRun() throws -> SplitRun {
        var parts: [SplitRun.Planned] = []
        if let (child, part) = try audioPart { parts.append(SplitRun.Planned(part, range: try child.timeRange())) }
        for (child, segment) in segments { parts.append(SplitRun.Planned(segment, range: try child.timeRange())) }
        return SplitRun(
            parts: parts,
            preset: preset,
            format: format,
            rangeStart: Int64(((job.range?.start ?? 0) * 1e6).rounded())
        )
    }

    private var audioPart: (Job, SplitJob.Segment)? {
        get throws { try audio.flatMap { child in try child.splitSegment().map { (child, $0) } } }
    }

    func run() async throws -> FinishedRun {
        let scratch = try SplitScratch(parent: job.id, context: context)
        let (destination, context, job) = (self.destination, self.context, self.job)
        let run = try splitRun()
        let names =
            run.video.map { $0.part.fileName(for: format) } + (run.audio.map { [$0.part.fileName(for: format)] } ?? [])
        // A retry may come after the staging sweep removed the directory (10 minutes after the
        // job failed or was cancelled): the parts it held are made again below.
        try scratch.makeDirectory()
        let missing = try await scratch.download(names, context: context) { self.isCancelled }
        let paths = run.video.map { run.path(of: $0.part, in: scratch.directory) }
        let audioPath = run.audio.map { run.path(of: $0.part, in: scratch.directory) }
        // Each child's record: the frames its encode was given and its edge scores.
        var made = segments.map { child, _ in
            SplitRun.Made(
                frames: SplitJob.PartRecord.of(child)?.frames,
                edges: try? child.result?[SplitJob.edgesKey]?.decoded(as: SegmentEdges.self)
            )
        }
        var reencodes = Array(repeating: 0, count: segments.count)
        var warnings: [String] = []
        // Every part must be the file its child wrote: one missing (a sweep, a lifecycle rule)
        // or not that file (swapped, truncated, replaced) is made again here, from the source
        // (a segment made here has no edge scores: its cuts are measured in the joined file).
        for (index, reason) in try await damagedParts(paths, audio: audioPath, missing: missing) {
            if index < 0, let (child, _) = try audioPart, let audioPath {
                _ = try await remake(child, part: .audio, to: audioPath)
                warnings.append("the audio part was not the file its job wrote (\(reason)): the join encoded it again")
            } else if index >= 0 {
                reencodes[index] += 1
                let frames = try await remake(segments[index].job, part: .video, to: paths[index])
                made[index] = SplitRun.Made(frames: frames ?? made[index].frames)
            }
        }
        let (uploadURL, contentType) = (self.uploadURL, RemoteMedia.contentType(of: format))
        var joined = try await run.join(
            in: scratch.directory,
            made: made,
            reencodes: reencodes,
            destination: destination,
            temporaryTag: context.lease.temporaryTag,
            limits: context.limits,
            isCancelled: { self.isCancelled },
            hold: { output in HeldExport(output, uploadURL: uploadURL, contentType: contentType) },
            remake: { index in
                SplitRun.Made(frames: try await self.remake(self.segments[index].job, part: .video, to: paths[index]))
            }
        )
        // Downloaded copies are not needed once joined (the objects stay until the
        // completion is recorded); a shared directory's parts stay for another join.
        if scratch.remote != nil { try? FileManager.default.removeItem(atPath: scratch.directory) }
        for index in joined.reports.indices {
            let child = segments[index].job
            joined.reports[index].worker = child.worker
            joined.reports[index].fps = Self.fps(of: child)
        }
        let held = joined.held
        // Only cuts without both scores open the source (for s3://, a pre-signed URL).
        let input = try? JobPaths.input(of: job, context: context)
        var result = try run.result(
            of: joined,
            file: held.temporaryPath,
            shownAs: uploadURL == nil ? (job.owner == nil ? destination : job.output) : job.output,
            source: { input.map { (try? ObjectStoreMedia.openable($0, context: context)) ?? $0 } },
            sources: (
                segments.first?.job.tracks.first?.sourceIndex ?? 0, audio?.tracks.first?.sourceIndex ?? 1
            ),
            limits: context.limits
        )
        if !warnings.isEmpty { result.warnings = (result.warnings ?? []) + warnings }
        state.withLock { $0.progress = 1 }
        let value = try JSONValue.result(result)
        let split = HeldSplit(held, scratch: scratch, parts: names, context: context)
        return FinishedRun(held: split, mediaSeconds: result.duration) { uploaded in
            var value = value
            if let uploaded, let url = uploadURL {
                value.set("bytes", .number(Double(uploaded.values.reduce(0, +))))
                value.set("output", .string(MediaLocation.displayed(url)))
            }
            return value
        }
    }
}

/// A join's output: an export's, and once the job's completion is recorded the parts are
/// removed, local and remote (when the job fails, the staging sweep removes the local ones and
/// the scratch prefix's lifecycle rule the objects).
final class HeldSplit: HeldOutput {
    private let export: HeldExport
    private let scratch: SplitScratch
    private let parts: [String]
    private let context: RunContext
    var uploads: [HeldUpload] { export.uploads }

    init(_ export: HeldExport, scratch: SplitScratch, parts: [String], context: RunContext) {
        self.export = export
        self.scratch = scratch
        self.parts = parts
        self.context = context
    }

    func commit() throws { try export.commit() }

    /// Called once the parent's completion is recorded: before, a lost lease means another join,
    /// which needs the parts.
    func published() {
        try? FileManager.default.removeItem(atPath: scratch.directory)
        scratch.removeObjects(parts, context: context)
    }

    func discard() { export.discard() }
}
