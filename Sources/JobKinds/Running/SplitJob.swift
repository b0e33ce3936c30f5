import Foundation
import JobctlCore
import Media
import Queue

/// A split export on a fleet (issue 27): the parent's first attempt plans the cuts and fans out
/// into the audio (child 0, the whole range, once) and one child per video segment; each
/// child writes its part into the scratch directory every worker reaches
/// (`SCRATCH/PARENTID.split/`); the parent's join proves the segments, joins them with the audio
/// and publishes the file like any export.
enum SplitJob {
    /// In a segment child's result: the scores of its first and last frames (`SegmentEdges`).
    static let edgesKey = "seamEdges"

    /// What a child of a split export writes: the export's one part type.
    typealias Segment = SplitExport.Part

    /// The scratch directory of one parent's parts.
    static func directory(of parent: JobID, scratch: String) -> String {
        (scratch as NSString).appendingPathComponent("\(parent).split")
    }

    /// A part's file name (its child's `output`, under the parent's scratch directory).
    static func fileName(_ segment: Segment, format: ContainerFormat) -> String { segment.fileName(for: format) }

    /// The parent's first attempt: its children, or `nil` when the export runs whole (a split
    /// of `auto` with one worker alive or a short input; a plan of one segment).
    static func fanOut(
        _ job: Job,
        preset: Preset,
        split: SplitRequest,
        context: RunContext
    ) async throws -> FanOutJob? {
        let range = try job.timeRange()
        let format = try job.containerFormat(preset: preset)
        // One level of graph: a child (a row written around `submit`'s checks) runs whole.
        guard job.parent == nil, SplitExport.canSplit(preset, format: format) else { return nil }
        let paths = try JobPaths.resolve(job, context: context)
        // The output is checked before anything is planned or encoded, as a one-piece export's
        // is: its join would otherwise find a missing directory after the whole encode.
        let (destination, uploadURL) = try ExportJob.destination(
            of: job,
            paths: paths,
            format: format,
            preset: preset,
            context: context
        )
        if uploadURL == nil { try OutputDestination.checkDirectory(of: destination) }
        let asset = try await onDedicatedThread("jobctl.plan") { () throws -> Asset in
            try Asset(location: try ObjectStoreMedia.openable(paths.input, context: context), limits: context.limits)
        }
        let resolved = try range.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        guard
            let asked = split.segmentLength(
                duration: resolved.expectedDuration ?? 0,
                aliveWorkers: context.aliveWorkers
            ),
            // A graph holds at most `maximumChildren` (the audio is one): a very long input gets
            // longer segments than asked.
            case let length = max(
                asked,
                (resolved.expectedDuration ?? 0) / Int64(JobGraphStateMachine.maximumChildren - 2) + 1
            ),
            let run = try await onDedicatedThread(
                "jobctl.plan",
                {
                    try SplitRun.plan(asset, range: range, segmentLength: length, preset: preset, format: format)
                }
            )
        else { return nil }
        func child(_ segment: Segment, range: TimeRange) throws -> JobRequest {
            var request = job.childRequest(
                kind: .export,
                preset: job.preset,
                settings: job.presetSettings,
                output: "\(job.id).split/" + fileName(segment, format: format),
                format: SplitExport.container(of: segment.medium, for: format).rawValue
            )
            request.role = try ExportKind.role(of: segment)
            request.range = Job.Range(
                start: Double(range.start) / 1e6,
                duration: range.duration.map { Double($0) / 1e6 }
            )
            return request
        }
        let children = try run.parts.map { planned in try child(planned.part, range: planned.range) }
        return FanOutJob(children: children)
    }
}

extension Job {
    /// The part a child of a split export writes (`nil`: not such a child).
    func splitSegment() throws(JobError) -> SplitJob.Segment? { try ExportKind.part(of: self) }

    /// The container of an export: the stored format, else the output's extension, else the
    /// preset's.
    func containerFormat(preset: Preset) throws(MediaError) -> ContainerFormat {
        if let name = format {
            guard let format = ContainerFormat(rawValue: name) else {
                throw MediaError(.presetIncompatible, "unknown format '\(name)'")
            }
            return format
        }
        let path = output.split(separator: "?", maxSplits: 1).first.map(String.init) ?? output
        return ContainerFormat(pathExtension: (path as NSString).pathExtension) ?? preset.format
    }
}
