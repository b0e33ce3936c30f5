import Foundation

/// How one part of a split export is encoded: the one rule that `SplitExportSession` (one
/// process), a queue child and the join (making a part again) all follow, so that the three
/// make the same bytes. A video segment is encoded with its pre- and post-roll around it
/// (`SplitExport.encode`), the post-roll from the source's frame rate and the encoder's
/// threads; the audio is cut exactly. (A part the join made again once had a fixed 2.5 s
/// post-roll, shorter than a 15 fps encoder's lookahead: other bytes than its child's.)
public struct PartEncode: Sendable, Equatable {
    public let part: ExportPart
    /// What the encoder is given: the part's range, with a video segment's pre- and post-roll.
    public let encoded: TimeRange
    /// Where the segment lies in `encoded` (`nil`: the audio).
    public let cut: SegmentCut?
    /// The video encoder's threads (`nil`: as many as the CPUs call for).
    public let videoThreads: Int?

    /// The encode of `part` (`.video` or `.audio`) of `range` of `asset`; `first`: the split
    /// range's first segment (no pre-roll).
    public init(
        _ part: ExportPart,
        range: TimeRange,
        first: Bool,
        asset: Asset,
        preset: Preset,
        videoThreads: Int? = nil
    ) {
        self.part = part
        self.videoThreads = videoThreads
        if part == .video {
            let postRoll = SplitExport.postRoll(for: asset, threads: videoThreads)
            (encoded, cut) = SplitExport.encode(range, first: first, preset: preset, postRoll: postRoll)
        } else {
            (encoded, cut) = (range, nil)
        }
    }

    /// A part's file name in the scratch directory, for an export into `format`: `audio.m4a`,
    /// `segment-00003.mp4` (the one rule for a child's output, the join's reading and
    /// `export --split`).
    public static func fileName(of part: ExportPart, index: Int, for format: ContainerFormat) -> String {
        let container = SplitExport.container(of: part, for: format)
        return part == .audio
            ? "audio.\(container.fileExtension)"
            : String(format: "segment-%05d.%@", index, container.fileExtension)
    }

    /// Where a video segment of `range` lies in its encode (what the join drops around it);
    /// it does not depend on the post-roll.
    public static func cut(of range: TimeRange, first: Bool, preset: Preset) -> SegmentCut {
        SplitExport.encode(range, first: first, preset: preset, postRoll: 0).cut
    }

    /// The session that encodes the part of `asset` into `outputPath`, in the part's container
    /// for an export into `format`.
    public func session(
        asset: Asset,
        preset: Preset,
        format: ContainerFormat,
        outputPath: String,
        temporaryTag: String? = nil
    ) -> ExportSession {
        ExportSession(
            asset: asset,
            preset: preset,
            outputPath: outputPath,
            format: SplitExport.container(of: part, for: format),
            timeRange: encoded,
            temporaryTag: temporaryTag,
            part: part,
            cut: cut,
            videoThreads: videoThreads
        )
    }
}
