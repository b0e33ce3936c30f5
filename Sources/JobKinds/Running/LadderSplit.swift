import Foundation
import JobctlCore
import Media
import Queue

/// A ladder split across a fleet (`submit --kind hls --split`): the parent's first attempt cuts
/// the range into chunks of whole 6 s segments and fans out into one child per chunk; each child
/// encodes every video rendition of its span into the scratch directory
/// (`SCRATCH/PARENTID.split/chunk-NNNNN/`); the parent's join encodes the sound, moves the
/// chunks' segments onto one timeline, writes the playlists and publishes the set. No picture is
/// stitched or encoded twice.
enum LadderSplit {
    /// The longest chunk (see `RenditionEncoders.open`'s segment target).
    static let longestChunk: Int64 = 180_000_000

    static func directory(of parent: JobID, chunk index: Int, scratch: String) -> String {
        (SplitJob.directory(of: parent, scratch: scratch) as NSString)
            .appendingPathComponent(String(format: "chunk-%05d", index))
    }

    /// The parent's first attempt: its children, or `nil` when the ladder is made whole (one
    /// chunk; `auto` with one worker or a short input; a scratch in an object store, which
    /// ladders do not use yet).
    static func fanOut(
        _ job: Job,
        options: LadderOptions,
        split: SplitRequest,
        context: RunContext
    ) async throws -> FanOutJob? {
        guard job.parent == nil, !MediaLocation.isObjectStore(context.scratchDirectory) else { return nil }
        let range = try job.timeRange()
        let input = try JobPaths.input(of: job, context: context)
        let asset = try await onDedicatedThread("jobctl.plan") { () throws -> Asset in
            try Asset(location: try ObjectStoreMedia.openable(input, context: context), limits: context.limits)
        }
        // Sound alone has no pictures to share out: the join would be the whole ladder.
        guard asset.primaryVideoTrack != nil else { return nil }
        let resolved = try range.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        guard
            let asked = split.segmentLength(
                duration: resolved.expectedDuration ?? 0,
                aliveWorkers: context.aliveWorkers
            )
        else { return nil }
        // Whole segments, at most the longest chunk, and no more children than a graph holds.
        let most = (resolved.expectedDuration ?? 0) / Int64(JobGraphStateMachine.maximumChildren - 1) + 1
        // So long that even the longest chunks would be too many: one worker makes it.
        guard most <= longestChunk else { return nil }
        let length = min(max(asked, most, 6_000_000), longestChunk)
        guard
            let (plan, ranges, first) = try await onDedicatedThread(
                "jobctl.plan",
                { try SplitExport.ladderPlan(asset, range: range, segmentLength: length) }
            )
        else { return nil }
        var children: [JobRequest] = []
        for (segment, chunkRange) in zip(plan.segments, ranges) {
            let offset = segment.start - first
            let last = segment.index == plan.segments.count - 1
            let chunk = LadderChunk(
                index: segment.index,
                offset: offset,
                firstSegment: 1 + Int((offset + 3_000_000) / 6_000_000),
                end: last ? nil : segment.end - first
            )
            var request = job.childRequest(
                kind: .hls,
                preset: job.preset,
                settings: job.presetSettings,
                output: "\(job.id).split/" + String(format: "chunk-%05d", segment.index),
                format: nil
            )
            request.role = try HLSKind.role(of: chunk)
            request.range = Job.Range(
                start: Double(chunkRange.start) / 1e6,
                duration: chunkRange.duration.map { Double($0) / 1e6 }
            )
            children.append(request)
        }
        return FanOutJob(children: children)
    }

    /// A child: its chunk's video renditions, staged and shown in its scratch directory.
    static func prepareChunk(
        _ job: Job,
        options: LadderOptions,
        chunk: LadderChunk,
        context: RunContext
    ) async throws -> FileSetJob {
        guard let parent = job.parent else {
            throw JobError(code: .internalError, message: "job \(job.id) has a ladder chunk but no parent")
        }
        let directory = Self.directory(of: parent, chunk: chunk.index, scratch: context.scratchDirectory)
        StagedFiles.removeLeftovers(in: directory, tagPrefix: "\(job.id)-")
        let range = try job.timeRange()
        let input = try JobPaths.input(of: job, context: context)
        let limits = context.limits
        let work = try await onDedicatedThread("jobctl.open") { () throws -> any FileSetWork in
            let asset = try Asset(location: try ObjectStoreMedia.openable(input, context: context), limits: limits)
            return HLSKind.Work(
                session: try LadderSession(asset: asset, options: options, timeRange: range, scope: .chunk(chunk))
            )
        }
        return FileSetJob(
            job: job,
            work: work,
            uploadURL: nil,
            directory: directory,
            tag: context.lease.temporaryTag,
            confinement: PathConfinement(inputRoot: nil, outputRoot: nil)
        )
    }

    /// The parent's join: the sound, the chunks' segments on one timeline, the playlists; the
    /// chunks are removed once the ladder is shown and the completion recorded.
    static func prepareJoin(_ job: Job, options: LadderOptions, context: RunContext) async throws -> FileSetJob {
        let children = context.children.sorted { ($0.childIndex ?? 0) < ($1.childIndex ?? 0) }
        guard !children.isEmpty, children.allSatisfy({ $0.status == .completed }) else {
            throw JobError(code: .internalError, message: "the ladder's join found chunks that did not complete")
        }
        let scratch = context.scratchDirectory
        let chunks = try children.map { child throws -> LadderChunk.Written in
            guard let chunk = try child.ladderChunk() else {
                throw JobError(code: .databaseCorrupt, message: "child \(child.id) of ladder \(job.id) has no chunk")
            }
            // What the chunk's job wrote, by its result: the join checks every file is still whole.
            var files: [String: Int64] = [:]
            for file in child.result?["files"]?.arrayValue ?? [] {
                if let name = file["name"]?.stringValue, let bytes = file["bytes"]?.doubleValue {
                    files[name] = Int64(bytes)
                }
            }
            return LadderChunk.Written(
                directory: Self.directory(of: job.id, chunk: chunk.index, scratch: scratch),
                chunk: chunk,
                range: try child.timeRange(),
                files: files
            )
        }
        var prepared = try await FileSetJob.prepare(job, context: context) { asset, range in
            HLSKind.Work(
                session: try LadderSession(
                    asset: asset,
                    options: options,
                    timeRange: range,
                    scope: .join(chunks: chunks)
                )
            )
        }
        let split = SplitJob.directory(of: job.id, scratch: scratch)
        prepared.afterPublished = { try? FileManager.default.removeItem(atPath: split) }
        return prepared
    }
}

extension Job {
    /// The chunk a child of a split ladder encodes (`nil`: not such a child).
    func ladderChunk() throws(JobError) -> LadderChunk? { try HLSKind.part(of: self) }
}
