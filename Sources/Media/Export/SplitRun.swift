import Foundation
import JobctlCore

/// A split export's pipeline, written once: plan → parts → join (proved; a segment the proof
/// refuses is encoded again) → seams → result. Its two drivers differ only in who makes the
/// parts: `SplitExportSession` runs them in a pool of tasks in one process (`export --split`);
/// on the queue each part is a child job (the fan-out plans with `plan`, the parent's join runs
/// `join` and `result` over the files its children wrote). Every part is encoded by
/// `PartEncode`, whichever driver (or join) encodes it.
public struct SplitRun: Sendable {
    /// One part with its range of the source.
    public struct Planned: Sendable, Hashable {
        public var part: SplitExport.Part
        public var range: TimeRange

        public init(_ part: SplitExport.Part, range: TimeRange) {
            self.part = part
            self.range = range
        }
    }

    /// What the encode of a video part recorded: the frames it was given (`nil`: the plan's)
    /// and the scores of its first and last frames (`nil`: measured in the joined file).
    public struct Made: Sendable, Hashable {
        public var frames: Int?
        public var edges: SegmentEdges?

        public init(frames: Int? = nil, edges: SegmentEdges? = nil) {
            self.frames = frames
            self.edges = edges
        }
    }

    /// A join proved and written: what it holds, the driver's hold on the file, and the
    /// segment table (each segment's new encodes counted).
    public struct Joined<Held: Sendable>: Sendable {
        public var joined: SegmentJoin.Joined
        public var held: Held
        public var reports: [SegmentReport]
        /// Each video part's record as joined (a part encoded again has its new one).
        public var made: [Made]
    }

    /// Every part, the audio first when there is one.
    public let parts: [Planned]
    public let preset: Preset
    public let format: ContainerFormat
    /// Where the range starts in the asset (µs, its start time not included).
    public let rangeStart: Int64

    /// A run of `parts` (as a split job's children keep them).
    public init(parts: [Planned], preset: Preset, format: ContainerFormat, rangeStart: Int64) {
        self.parts = parts
        self.preset = preset
        self.format = format
        self.rangeStart = rangeStart
    }

    /// The audio part (the whole range), when the preset keeps sound and the source has some.
    public var audio: Planned? { parts.first { $0.part.medium == .audio } }
    /// The video parts, in the plan's order (a segment's index is its position).
    public var video: [Planned] { parts.filter { $0.part.medium == .video } }

    /// Step one: the plan for `range` of `asset` in segments of about `segmentLength`; `nil`
    /// when it makes one segment (the export runs whole).
    public static func plan(
        _ asset: Asset,
        range: TimeRange,
        segmentLength: Int64,
        preset: Preset,
        format: ContainerFormat
    ) throws -> SplitRun? {
        guard let (plan, ranges) = try SplitExport.plan(asset, range: range, segmentLength: segmentLength) else {
            return nil
        }
        let resolved = try range.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        let parts = SplitExport.parts(
            plan,
            ranges: ranges,
            range: range,
            resolved: resolved,
            origin: asset.startTime,
            audio: preset.audio != nil && !asset.audioTracks.isEmpty
        )
        return SplitRun(
            parts: parts.map { Planned($0.part, range: $0.range) },
            preset: preset,
            format: format,
            rangeStart: resolved.start
        )
    }

    /// Where `part` is written in a scratch `directory` (the one rule of both drivers).
    public func path(of part: SplitExport.Part, in directory: String) -> String {
        (directory as NSString).appendingPathComponent(part.fileName(for: format))
    }

    /// The encode of one part: the rule each driver and the join's new encodes follow.
    public func encode(_ planned: Planned, asset: Asset, videoThreads: Int? = nil) -> PartEncode {
        PartEncode(
            planned.part.medium,
            range: planned.range,
            first: planned.part.index == 0,
            asset: asset,
            preset: preset,
            videoThreads: videoThreads
        )
    }

    /// Step three: the parts written in `directory` joined into a hidden file beside
    /// `destination` until the proof passes, `hold` taking the file (shown by the driver:
    /// renamed into place, or held for an upload), `remake` encoding a refused segment again.
    /// `made`: each video part's record, by index; `reencodes`: new encodes made before
    /// (a part the queue's join found damaged).
    ///
    /// - Throws: `MediaError` `encode_failed` when a segment is refused past
    ///   `SplitExport.maximumReencodes` new encodes, `cancelled` once `isCancelled`.
    public func join<Held: Sendable>(
        in directory: String,
        made: [Made],
        reencodes: [Int]? = nil,
        destination: String,
        temporaryTag: String?,
        limits: ResourceLimits,
        isCancelled: @escaping @Sendable () -> Bool,
        hold: @escaping @Sendable (consuming PendingOutput) throws -> Held,
        remake: (_ segment: Int) async throws -> Made
    ) async throws -> Joined<Held> {
        let video = self.video
        var made = made
        var proved = ProvedJoin(
            video.enumerated().map { index, planned in
                SegmentJoin.Segment(
                    planned.part,
                    path: path(of: planned.part, in: directory),
                    frames: index < made.count ? made[index].frames : nil,
                    range: planned.range,
                    preset: preset
                )
            },
            reencodes: reencodes
        )
        let (audio, format) = (self.audio.map { path(of: $0.part, in: directory) }, self.format)
        let (joined, held): (SegmentJoin.Joined, Held)
        do {
            (joined, held) = try await proved.run(
                isCancelled: isCancelled,
                join: { segments in
                    try await onDedicatedThread("jobctl.join") { () throws -> (SegmentJoin.Joined, Held) in
                        let finished = try SegmentJoin.join(
                            segments,
                            audio: audio,
                            destination: destination,
                            format: format,
                            temporaryTag: temporaryTag,
                            limits: limits,
                            isCancelled: isCancelled
                        )
                        let joined = finished.joined
                        return (joined, try hold(finished.takeOutput()))
                    }
                },
                remake: { index in
                    let again = try await remake(index)
                    made[index] = again
                    return again.frames
                }
            )
        } catch let refused as ProvedJoin.Refused {
            throw MediaError(.encodeFailed, refused.description)
        }
        var reports = SplitExport.reports(video.map(\.part.index), joined: joined)
        for index in reports.indices where proved.reencodes[index] > 0 {
            reports[index].reencoded = proved.reencodes[index]
        }
        return Joined(joined: joined, held: held, reports: reports, made: made)
    }

    /// Step four: the result of the joined file at `file` (shown as `shownAs`), each cut's
    /// seam quality from the scores its segments' encodes recorded, those missing measured
    /// against the source `source` gives (asked for only then; `nil`: left out).
    /// `sources`: the asset's video and audio track indices.
    public func result<Held>(
        of joined: Joined<Held>,
        file: String,
        shownAs: String? = nil,
        source: () -> String?,
        sources: (video: Int, audio: Int),
        limits: ResourceLimits
    ) throws -> ExportResult {
        var reports = joined.reports
        SplitExport.measureSeams(
            &reports,
            output: file,
            source: source,
            rangeStart: rangeStart,
            joined: joined.joined,
            limits: limits,
            edges: joined.made.map(\.edges)
        )
        return try SplitExport.result(
            of: file,
            shownAs: shownAs,
            joined: joined.joined,
            reports: reports,
            rangeStart: rangeStart,
            sources: sources,
            limits: limits
        )
    }
}
