import Foundation

extension SplitExport {
    /// One part of a split export as its plan gives it: the audio (once, the whole range) or
    /// one segment's video. The one part type of an export's split, whichever driver makes it:
    /// a task of `export --split`'s pool, or a child on the queue (its role's part, stored as
    /// JSON: `part`, `index`, `frames`, `start`, `end`, `last`).
    public struct Part: Codable, Sendable, Hashable {
        /// Audio or video.
        public var medium: ExportPart
        /// The segment's index in the plan (video), or -1 (audio).
        public var index: Int
        /// Frames the plan gives it (video).
        public var frames: Int
        /// Its range in the asset's own clock (absolute µs), for the join's arithmetic.
        public var start: Int64
        public var end: Int64
        /// The range's last segment (no cut after it). `nil` in rows written before it was kept.
        public var last: Bool?

        enum CodingKeys: String, CodingKey {
            case medium = "part"
            case index, frames, start, end, last
        }

        public init(medium: ExportPart, index: Int, frames: Int, start: Int64, end: Int64, last: Bool? = nil) {
            self.medium = medium
            self.index = index
            self.frames = frames
            self.start = start
            self.end = end
            self.last = last
        }

        /// Its file's name in the scratch directory.
        public func fileName(for format: ContainerFormat) -> String {
            PartEncode.fileName(of: medium, index: index, for: format)
        }
    }

    /// The parts of `plan`, each with its range of the source: the audio first (the whole
    /// `range`) when `audio` (the preset keeps audio and the source has some), then one video
    /// part per segment. `origin` is the asset's start time; `resolved` is `range` resolved
    /// against the asset.
    public static func parts(
        _ plan: SplitPlan,
        ranges: [TimeRange],
        range: TimeRange,
        resolved: ResolvedRange,
        origin: Int64,
        audio: Bool
    ) -> [(part: Part, range: TimeRange)] {
        var parts: [(part: Part, range: TimeRange)] = []
        if audio {
            let end = resolved.end ?? (ranges.last.map { $0.start + ($0.duration ?? 0) } ?? resolved.start)
            parts.append(
                (Part(medium: .audio, index: -1, frames: 0, start: origin + resolved.start, end: origin + end), range)
            )
        }
        for (segment, segmentRange) in zip(plan.segments, ranges) {
            let video = Part(
                medium: .video,
                index: segment.index,
                frames: segment.frameCount,
                start: origin + segmentRange.start,
                end: origin + segmentRange.start + (segmentRange.duration ?? 0),
                last: segment.index == plan.segments.count - 1
            )
            parts.append((video, segmentRange))
        }
        return parts
    }
}

extension SegmentJoin.Segment {
    /// The join's view of a video part written at `path`: its frames (as encoded, else the
    /// plan's) and where the encode of `range` cut it.
    public init(_ part: SplitExport.Part, path: String, frames: Int?, range: TimeRange, preset: Preset) {
        let cut = PartEncode.cut(of: range, first: part.index == 0, preset: preset)
        self.init(
            path: path,
            frames: frames ?? part.frames,
            start: part.start,
            end: part.end,
            from: cut.start,
            origin: cut.origin
        )
    }
}
