import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

/// Exports an asset with a preset, a time range and an output format
/// (`AVAssetExportSession`): an `AssetReader` and an `AssetWriter` wired track by track.
///
/// Each track has its own thread (AVFoundation's per-track serialization queue) that moves samples
/// from its reader output to its writer input while the input is ready for more media data;
/// audio and video are therefore processed concurrently. `progress` and `status` can be read,
/// and `cancel()` called, from any thread; a cancelled or failed export leaves no file at the
/// destination.
///
/// Sendable: its configuration is immutable; status, progress, the reader, writer and pairs
/// are in `state` (a mutex).
public final class ExportSession: @unchecked Sendable {
    public let asset: Asset
    public let preset: Preset
    public let outputPath: String
    public let format: ContainerFormat
    public let timeRange: TimeRange
    /// Goes into the temporary file's name (see `AssetWriter.temporaryPath(for:tag:)`).
    public let temporaryTag: String?
    /// The whole export, or one part of a split one.
    public let part: ExportPart
    /// A video segment's place in its encode (pre- and post-roll around it).
    public let cut: SegmentCut?
    /// The video encoder's threads (`nil`: as many as the CPUs call for).
    public let videoThreads: Int?

    private let state = Mutex(State())

    private struct State {
        var status: Status = .unknown
        var error: MediaError?
        var cancelRequested = false
        var reader: AssetReader?
        var writer: AssetWriter?
        var pairs: [(output: AssetReaderTrackOutput, input: AssetWriterInput)] = []
        var rangeDuration: Int64?
        var progress: Double = 0
    }

    /// - Parameter format: the container; by default the one the output's extension names,
    ///   else the preset's.
    public init(
        asset: Asset,
        preset: Preset,
        outputPath: String,
        format: ContainerFormat? = nil,
        timeRange: TimeRange = .all,
        temporaryTag: String? = nil,
        part: ExportPart = .whole,
        cut: SegmentCut? = nil,
        videoThreads: Int? = nil
    ) {
        self.videoThreads = videoThreads
        self.temporaryTag = temporaryTag
        self.part = part
        self.cut = cut
        self.asset = asset
        self.preset = preset
        self.outputPath = outputPath
        self.format = format ?? ContainerFormat(pathExtension: (outputPath as NSString).pathExtension) ?? preset.format
        self.timeRange = timeRange
    }

    public var status: Status { state.withLock { $0.status } }
    public var error: MediaError? { state.withLock { $0.error } }

    /// 0…1, never decreasing: the share of the range written by the slowest track.
    public var progress: Double {
        state.withLock { state in
            guard state.status == .reading, let duration = state.rangeDuration, duration > 0 else {
                return state.status == .completed ? 1 : state.progress
            }
            var slowest = 1.0
            for pair in state.pairs where pair.input.status != .completed {
                slowest = min(slowest, Double(pair.input.endMicroseconds) / Double(duration))
            }
            state.progress = max(state.progress, min(slowest, 0.999))
            return state.progress
        }
    }

    /// Each track's status and counters.
    public var tracks: [TrackProgress] {
        state.withLock { state in
            state.pairs.enumerated().map { position, pair in
                let statuses = [pair.output.status, pair.input.status]
                let status: Status =
                    statuses.contains(.failed)
                    ? .failed
                    : statuses.contains(.cancelled)
                        ? .cancelled
                        : statuses.allSatisfy({ $0 == .completed })
                            ? .completed
                            : statuses.contains(.reading) ? .reading : .unknown
                return TrackProgress(
                    index: pair.input.streamIndex ?? position,
                    sourceIndex: pair.output.track.index,
                    mediaType: pair.output.track.mediaType,
                    status: status,
                    codec: pair.input.codecName,
                    read: pair.output.samplesRead,
                    written: pair.input.samplesWritten
                )
            }
        }
    }

    /// Cancels the export from any thread: the reader and writer stop within moments and the
    /// temporary file is deleted. `export()` then throws a cancellation.
    public func cancel() {
        let (reader, writer) = state.withLock { state -> (AssetReader?, AssetWriter?) in
            state.cancelRequested = true
            return (state.reader, state.writer)
        }
        reader?.cancelReading()
        writer?.cancelWriting()
    }

    /// Runs the export on the calling thread (which it blocks) and its own threads.
    public func export() throws(MediaError) -> ExportResult {
        let finished = try exportDeferringCommit()
        let result = finished.result
        try finished.output.commit()
        return result
    }

    /// Runs the export on its own threads, off the Swift concurrency pool; cancelling the task
    /// cancels the export.
    public func export() async throws -> ExportResult {
        let finished = try await exportDeferringCommit()
        let result = finished.result
        try finished.output.commit()
        return result
    }

    /// Exports, but leaves the complete file beside the destination until
    /// `PendingOutput.commit()`: a job checks it still holds its lease before its output
    /// becomes visible.
    public func exportDeferringCommit() throws(MediaError) -> FinishedExport {
        let (result, writer) = try exportKeepingWriter()
        return FinishedExport(result: result, output: PendingOutput(writer: writer))
    }

    /// The export, with the writer whose finished file waits for commit.
    private func exportKeepingWriter() throws(MediaError) -> (ExportResult, AssetWriter) {
        let started = state.withLock { state -> Bool in
            guard state.status == .unknown else { return false }
            state.status = .reading
            return true
        }
        precondition(started, "an export session runs once")
        do {
            let outcome = try run()
            state.withLock { $0.status = .completed }
            return outcome
        } catch {
            state.withLock {
                $0.status = error.isCancellation ? .cancelled : .failed
                $0.error = error
            }
            throw error
        }
    }

    /// `exportDeferringCommit()` on its own thread; cancelling the task cancels the export.
    public func exportDeferringCommit() async throws -> FinishedExport {
        // A continuation carries only copyable values: the writer crosses it, and becomes the
        // one `PendingOutput` on this side. (Should this task never take it, the writer's own
        // deinit closes its file; the staging sweep removes the leftover.)
        let (result, writer) = try await withTaskCancellationHandler {
            try await onDedicatedThread("jobctl.export") { [self] in try exportKeepingWriter() }
        } onCancel: {
            cancel()
        }
        return FinishedExport(result: result, output: PendingOutput(writer: writer))
    }

    // MARK: -

    /// What the headers say, against the asset's limits, before anything is decoded (the
    /// reader and writer check again as they go).
    private func checkLimits(_ plan: ExportPlan, range: ResolvedRange) throws(MediaError) {
        let limits = asset.limits
        if let error = limits.tooManyTracks(asset.tracks.count, in: asset.displayName) { throw error }
        for track in plan.tracks {
            guard case .video = track.readerSettings, let width = track.source.width, let height = track.source.height
            else { continue }
            if let error = limits.pictureTooLarge(
                width: width,
                height: height,
                what: "video track \(track.source.index) of \(asset.displayName)"
            ) {
                throw error
            }
        }
        if let duration = range.expectedDuration,
            let error = limits.tooLong(
                duration,
                what: "the export of \(asset.displayName)\(timeRange == .all ? "" : " (range \(timeRange))")"
            )
        {
            throw error
        }
    }

    private func run() throws(MediaError) -> (ExportResult, AssetWriter) {
        try OutputDestination.check(outputPath, input: asset.location)
        let range = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        let plan = try ExportPlan(
            asset: asset,
            preset: preset,
            format: format,
            part: part,
            cut: cut,
            videoThreads: videoThreads
        )
        try checkLimits(plan, range: range)
        let reader = try AssetReader(asset: asset, timeRange: timeRange)
        let writer = try AssetWriter(
            destination: outputPath,
            format: format,
            temporaryTag: temporaryTag,
            limits: asset.limits
        )
        var pairs: [(output: AssetReaderTrackOutput, input: AssetWriterInput)] = []
        do throws(MediaError) {
            for track in plan.tracks {
                let output = AssetReaderTrackOutput(track: track.source, settings: track.readerSettings)
                let input = AssetWriterInput(settings: track.writerSettings)
                reader.add(output)
                try writer.add(input, copyingFrom: asset)
                pairs.append((output, input))
            }
        } catch {
            writer.cancelWriting()
            throw error
        }
        // Several tracks' threads: the muxer takes their packets in the input's order (decision #153).
        reader.marksInputOrder = pairs.count > 1
        writer.ordersByInput = pairs.count > 1
        let cancelled = state.withLock { state -> Bool in
            state.reader = reader
            state.writer = writer
            state.pairs = pairs
            state.rangeDuration = range.expectedDuration
            return state.cancelRequested
        }
        if cancelled { throw MediaError.cancelled() }

        try writer.startWriting()
        do {
            try reader.startReading()
        } catch {
            writer.cancelWriting()
            throw error
        }

        // One thread per track: move samples while the input is ready for more media data.
        let failure = Mutex<MediaError?>(nil)
        let threads = ThreadGroup()
        for (output, input) in pairs {
            threads.spawn("jobctl.track.\(output.track.index)") {
                do throws(MediaError) {
                    while input.isReadyForMoreMediaData {
                        guard let sample = try output.copyNextSample() else {
                            try input.markAsFinished()
                            break
                        }
                        try input.append(sample)
                    }
                } catch {
                    let first = failure.withLock { recorded -> Bool in
                        guard recorded == nil || (recorded!.isCancellation && !error.isCancellation) else {
                            return false
                        }
                        recorded = error
                        return true
                    }
                    if first {
                        // Stop the other tracks: their queues wake up empty.
                        if error.isCancellation { reader.cancelReading() } else { reader.fail(error) }
                    }
                }
            }
        }
        threads.join()
        reader.waitUntilFinished()

        let userCancelled = state.withLock { $0.cancelRequested }
        if userCancelled {
            writer.cancelWriting()
            throw MediaError.cancelled()
        }
        if let error = reader.error ?? failure.withLock({ $0 }) ?? writer.error {
            writer.fail(error)
            throw error
        }
        let produced = pairs.map(\.input.endMicroseconds).max() ?? 0
        var warnings = asset.warnings
        switch Shortfall(produced: produced, range: range, plan: plan, reader: reader) {
        case .none: break
        case .damage(let error):
            writer.fail(error)
            throw error
        case .overstated(let warning): warnings.append(warning)
        }
        // An output with no media is no export (an undecodable or encrypted frame, a file of
        // 20 samples): it fails rather than "complete" with a file of headers.
        if pairs.allSatisfy({ $0.input.samplesWritten == 0 }) {
            let what = pairs.map { "\($0.output.track.mediaType) track \($0.output.track.index)" }
            let error = MediaError(
                .decodeFailed,
                "nothing of \(asset.displayName) could be exported (\(what.joined(separator: ", ")): no frame or sample came out); the media is too short or cannot be decoded",
                detail: reader.error?.detail
            )
            writer.fail(error)
            throw error
        }
        let bytes = try writer.finishWritingWithoutCommit()
        let actualStart = reader.actualStart ?? range.start
        let result = ExportResult(
            output: outputPath,
            bytes: bytes,
            duration: Double(produced) / 1_000_000,
            actualRange: .init(start: Double(actualStart) / 1_000_000, duration: Double(produced) / 1_000_000),
            tracks: pairs.map { output, input in
                let written = input.samplesWritten
                var track = ExportResult.Track(
                    index: input.streamIndex ?? 0,
                    sourceIndex: output.track.index,
                    mediaType: input.mediaType,
                    codec: input.codecName ?? output.track.codec,
                    duration: Double(input.endMicroseconds) / 1_000_000
                )
                switch input.settings {
                case .video(let encoding):
                    track.width = encoding.size.width
                    track.height = encoding.size.height
                    track.frames = input.segmentFrames.map(Int64.init) ?? written  // a segment: its own frames
                case .audio(let encoding):
                    track.sampleRate = encoding.sampleRate
                    track.channels = encoding.channels
                    track.samples = written
                case .passthrough(let source):
                    track.width = source.width
                    track.height = source.height
                    track.sampleRate = source.sampleRate
                    track.channels = source.channels
                    track.packets = written
                }
                return track
            }
        )
        var finished = result
        if asset.durationIsIndeterminate {
            let end = range.start + produced
            warnings.append(
                "\(asset.displayName)'s headers do not say how long it is (fragmented, duration indeterminate): it held media until \(TimeRange.format(end))"
                    + (range.end.map {
                        $0 > end + 100_000 ? ", before the end of the range (\(TimeRange.format($0)))" : ""
                    } ?? "")
            )
        }
        finished.warnings = warnings.isEmpty ? nil : warnings
        return (finished, writer)
    }
}
