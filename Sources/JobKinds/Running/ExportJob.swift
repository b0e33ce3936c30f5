import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP

/// An `export` job made ready to run: its asset opened and its session configured.
struct ExportJob: PreparedJob {
    let session: ExportSession
    /// Where the finished file is PUT, for an `http(s)` output (the session then writes to a
    /// staging file of the worker's).
    let uploadURL: String?
    /// The output as the result names it when that is not the path written (an API key's job:
    /// its relative path).
    let shownOutput: String?
    /// A segment of a split export: what to score its first and last frames against (the
    /// result's `seamEdges`, which the join reads instead of decoding every cut itself).
    var seam: SegmentSeam?
    /// A part of a split export (a segment or the audio): its result records the file it wrote
    /// (`SplitJob.PartRecord`), which the join holds the part to.
    var part: ExportPart?
    /// A directory of this job's own, removed once its output is published (a split part
    /// staged for an object store: `SplitScratch.staging(of:context:)`).
    var stagingDirectory: String?

    struct SegmentSeam: Sendable {
        var source: String
        var encoded: TimeRange
        var cut: SegmentCut
        var first: Bool
        var last: Bool
    }

    /// Opens the input and builds the session from the job's stored preset, range and format.
    /// Errors are the job's (`input_not_found`, `preset_incompatible`…).
    static func prepare(_ job: Job, preset: Preset, context: RunContext) async throws -> ExportJob {
        let range = try job.timeRange()
        let format = try job.format.map { name throws(MediaError) -> ContainerFormat in
            guard let format = ContainerFormat(rawValue: name) else {
                throw MediaError(.presetIncompatible, "unknown format '\(name)'")
            }
            return format
        }
        let paths = try JobPaths.resolve(job, context: context)
        let (outputPath, uploadURL) = try destination(
            of: job,
            paths: paths,
            format: format,
            preset: preset,
            context: context
        )
        removeLeftovers(of: job, writingTo: outputPath)
        let asset = try await openInput(job, path: paths.input, context: context)
        let session = ExportSession(
            asset: asset,
            preset: preset,
            outputPath: outputPath,
            format: format,
            timeRange: range,
            temporaryTag: context.lease.temporaryTag
        )
        return ExportJob(session: session, uploadURL: uploadURL, shownOutput: job.owner == nil ? nil : job.output)
    }

    /// Where an export's file is written: its checked local output (never a device, a link or
    /// the input), or a staging file of the worker's for an `http(s)` output, with its URL.
    static func destination(
        of job: Job,
        paths: JobPaths,
        format: ContainerFormat?,
        preset: Preset,
        context: RunContext
    ) throws -> (path: String, uploadURL: String?) {
        guard MediaLocation.isRemote(job.output) else {
            do throws(MediaError) {
                try OutputDestination.check(paths.output, input: paths.input)
            } catch {
                throw JobError(code: error.code, message: error.message, retryable: false)
            }
            return (paths.output, nil)
        }
        try RemoteMedia.createStagingDirectory(context.stagingDirectory)
        let staging = RemoteMedia.stagingPath(
            for: job.output,
            jobID: job.id,
            format: format,
            preset: preset,
            directory: context.stagingDirectory
        )
        return (staging, job.output)
    }

    /// A child of a split export: its part (one segment's video, or the audio) of the parent's
    /// range, into the parent's scratch directory (`SplitJob`).
    static func prepareSegment(
        _ job: Job,
        preset: Preset,
        segment: SplitJob.Segment,
        context: RunContext
    ) async throws -> ExportJob {
        guard let parent = job.parent, let name = job.format.flatMap(ContainerFormat.init(rawValue:)),
            (job.output as NSString).lastPathComponent == SplitJob.fileName(segment, format: name)
        else {
            throw JobError(
                code: .databaseCorrupt,
                message: "job \(job.id) is a part of a split export without a parent or with an unexpected output",
                retryable: false
            )
        }
        let scratch = try SplitScratch(parent: parent, context: context)
        let staging = scratch.staging(of: job.id, context: context)
        try SplitScratch.makeDirectory(staging ?? scratch.directory)
        let output = ((staging ?? scratch.directory) as NSString)
            .appendingPathComponent(SplitJob.fileName(segment, format: name))
        // On an object store, the part is uploaded as an output would be.
        let upload = scratch.object(of: SplitJob.fileName(segment, format: name)).map { "\($0)" }
        removeLeftovers(of: job, writingTo: output)
        let input = try JobPaths.input(of: job, context: context)
        let asset = try await openInput(job, path: input, context: context)
        // A video segment is encoded with pre- and post-roll around it (the join drops them).
        let encode = PartEncode(
            segment.medium,
            range: try job.timeRange(),
            first: segment.index == 0,
            asset: asset,
            preset: preset
        )
        let session = encode.session(
            asset: asset,
            preset: preset,
            format: name,
            outputPath: output,
            temporaryTag: context.lease.temporaryTag
        )
        let seam = encode.cut.map {
            SegmentSeam(
                source: asset.location,
                encoded: encode.encoded,
                cut: $0,
                first: segment.index == 0,
                last: segment.last == true
            )
        }
        // An API key's job shows its part by its name in the scratch, not the host's path.
        let shown = upload ?? (job.owner == nil ? nil : job.output)
        var prepared = ExportJob(
            session: session,
            uploadURL: upload,
            shownOutput: shown,
            seam: seam,
            part: segment.medium
        )
        prepared.stagingDirectory = staging
        return prepared
    }

    /// The job's input opened (a URL checked by the address guard first), off the event loops.
    static func openInput(_ job: Job, path: String, context: RunContext) async throws -> Asset {
        try await onDedicatedThread("jobctl.open") { () throws -> Asset in
            try Asset(location: try ObjectStoreMedia.openable(path, context: context), limits: context.limits)
        }
    }

    /// Temporary files of earlier attempts of this job (a worker killed mid-export leaves one
    /// beside the destination): `.NAME.JOBID-ATTEMPT-TOKEN.jobctl.tmp`.
    static func removeLeftovers(of job: Job, writingTo output: String) {
        let destination = URL(fileURLWithPath: output)
        let directory = destination.deletingLastPathComponent().path
        let prefix = URL(fileURLWithPath: AssetWriter.temporaryPath(for: output, tag: "\(job.id)-")).lastPathComponent
            .replacingOccurrences(of: ".jobctl.tmp", with: "")
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(prefix) && entry.hasSuffix(".jobctl.tmp") {
            try? FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent(entry))
        }
    }

    var progress: Double { session.progress }

    func cancel() { session.cancel() }

    func run() async throws -> FinishedRun {
        let finished = try await session.exportDeferringCommit()
        let result: JSONValue
        do {
            result = try JSONValue(encoding: finished.result)
        } catch {
            throw JobError.unstorableResult(error)  // the output, dropped, is deleted
        }
        let duration = finished.result.duration
        let frames = finished.result.tracks.first { $0.mediaType == .video }?.frames.map { Int($0) }
        let (uploadURL, shownOutput) = (self.uploadURL, self.shownOutput)
        let held = HeldExport(
            finished.takeOutput(),
            uploadURL: uploadURL,
            contentType: RemoteMedia.contentType(of: session.format),
            removingWhenPublished: stagingDirectory
        )
        var measuredEdges: JSONValue?
        if let seam {
            let (path, limits) = (held.temporaryPath, session.asset.limits)
            let measured = try await onDedicatedThread("jobctl.seam") {
                SeamQuality.edges(
                    ofSegment: path,
                    source: seam.source,
                    encoded: seam.encoded,
                    cut: seam.cut,
                    first: seam.first,
                    last: seam.last,
                    limits: limits
                )
            }
            measuredEdges = try? JSONValue(encoding: measured)
        }
        let edges = measuredEdges
        var record: JSONValue?
        if let part {
            let (path, limits) = (held.temporaryPath, session.asset.limits)
            record = try JSONValue.result(
                try await onDedicatedThread("jobctl.part") {
                    try SplitJob.PartRecord.of(path, part: part, frames: frames, limits: limits)
                }
            )
        }
        let partRecord = record
        return FinishedRun(held: held, mediaSeconds: duration) { uploaded in
            var result = result
            if let edges { result.set(SplitJob.edgesKey, edges) }
            if let partRecord { result.set(SplitJob.PartRecord.key, partRecord) }
            if let shownOutput { result.set("output", .string(shownOutput)) }
            if let uploaded, let url = uploadURL {
                result.set("bytes", .number(Double(uploaded.values.reduce(0, +))))
                result.set("output", .string(MediaLocation.displayed(url)))
            }
            return result
        }
    }

    /// Progress and per-track counters for the job table.
    var tracks: [JobTrack] {
        session.tracks.map { track in
            JobTrack(
                index: track.index,
                sourceIndex: track.sourceIndex,
                mediaType: track.mediaType.rawValue,
                status: JobStatus(rawValue: track.status.rawValue) ?? .unknown,
                codec: track.codec,
                read: track.read,
                written: track.written
            )
        }
    }

}

extension Job {
    /// The job's range as the media module takes it (microseconds); `.all` without one. A
    /// stored range that makes no range (written by an older API, or by hand: a duration under
    /// a microsecond, a negative start) fails the job, `range_out_of_bounds`, instead of
    /// trapping the worker.
    package func timeRange() throws(MediaError) -> TimeRange {
        guard let range else { return .all }
        guard let timeRange = TimeRange(seconds: range.start, duration: range.duration) else {
            throw MediaError(
                .rangeOutOfBounds,
                "the job's range (start \(range.start) s, duration \(range.duration.map { "\($0) s" } ?? "to the end")) is not a valid range"
            )
        }
        return timeRange
    }
}
