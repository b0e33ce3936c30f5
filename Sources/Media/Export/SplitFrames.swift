import CFFmpeg
import JobctlCore

/// Which part of an export a session writes: all of it, or one part of a split export (issue
/// 27) — its video alone (one segment, x264 `stitchable`), or its audio alone (the whole range,
/// once: never per segment).
public enum ExportPart: String, Sendable, Hashable, Codable {
    case whole
    case video
    case audio
}

/// The video frames of an export's range, as the export would show them, with the exact
/// microseconds a segment starting or ending at each one needs.
///
/// A range starting at a frame that is not exactly on a microsecond would otherwise show the
/// frame before it too (the reader shows "the frame on screen at the start"), or lose it to
/// the segment before: a segment starts at the first microsecond at or after its first frame
/// (`starts`) and the one before ends at the last microsecond at or before it (`ends`), so
/// each frame lands in exactly one segment (time bases coarser than 1 µs: all real ones).
public struct SplitFrames: Sendable, Hashable {
    /// The first microsecond at or after each frame (the range's start for frame 0, which is
    /// the frame on screen at the start), relative to the asset's start; strictly increasing.
    public var starts: [Int64]
    /// The last microsecond at or before each frame (a segment ending there excludes it).
    public var ends: [Int64]
    /// Where the range ends (µs): its end, or the end of the last frame.
    public var rangeEnd: Int64
    /// Whether each frame's packet is a keyframe in the source, and its size in bytes: what
    /// `SceneCuts` looks at before it decodes anything (empty when not known).
    public var keyframes: [Bool] = []
    public var sizes: [Int] = []

    public var count: Int { starts.count }

    /// Reads the packets of the asset's primary video track (a demux pass, nothing decoded)
    /// and keeps the frames the export of `range` shows.
    public static func scan(_ asset: Asset, range: TimeRange) throws(MediaError) -> SplitFrames {
        guard let video = asset.primaryVideoTrack else {
            throw MediaError(.presetIncompatible, "\(asset.displayName) has no video track to split")
        }
        let resolved = try range.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        // A reader of its own: the asset's input belongs to the export that may follow.
        let scan = try Asset(location: asset.location, limits: asset.limits)
        let stream = scan.input.stream(video.index)
        let timeBase = stream.pointee.time_base
        let origin = asset.startTime
        let start = origin + resolved.start
        let end = resolved.end.map { origin + $0 }
        var times: [Int64] = []
        var packets: [Int64: (keyframe: Bool, size: Int)] = [:]
        var lastEnd: Int64 = 0
        let packet = Packet()
        while true {
            let result = scan.input.read(into: packet.pointer)
            if result == AVErr.eof { break }
            guard result >= 0 else {
                throw MediaError(
                    .decodeFailed,
                    "\(asset.displayName) could not be read to plan the split: \(FFError.message(for: result))"
                )
            }
            defer { av_packet_unref(packet.pointer) }
            guard packet.streamIndex == video.index, packet.pts != noPTS else { continue }
            if packet.pointer.pointee.flags & AV_PKT_FLAG_DISCARD != 0 { continue }
            times.append(packet.pts)
            packets[packet.pts] = (
                packet.pointer.pointee.flags & AV_PKT_FLAG_KEY != 0, Int(packet.pointer.pointee.size)
            )
            lastEnd = max(lastEnd, packet.pts + max(packet.duration, 1))
        }
        times = Array(Set(times)).sorted()
        func compare(_ ticks: Int64, _ micros: Int64) -> Int32 {
            av_compare_ts(ticks, timeBase, micros, microsecondBase)
        }
        let inRange = times.filter { end == nil || compare($0, end!) < 0 }
        let shownAtStart = inRange.contains { compare($0, start) <= 0 }
        var after = inRange.filter { compare($0, start) > 0 }
        guard shownAtStart || !after.isEmpty else {
            throw MediaError(.rangeOutOfBounds, "\(asset.displayName) has no video frame in the range to split")
        }
        // Without a frame at or before the start, the first one after it is shown there.
        let shown = shownAtStart ? inRange.last { compare($0, start) <= 0 }! : after.removeFirst()
        let up = after.map { av_rescale_q_rnd($0, timeBase, microsecondBase, AV_ROUND_UP) - origin }
        let down = after.map { av_rescale_q_rnd($0, timeBase, microsecondBase, AV_ROUND_DOWN) - origin }
        let rangeEnd =
            resolved.end
            ?? max(
                av_rescale_q_rnd(lastEnd, timeBase, microsecondBase, AV_ROUND_UP) - origin,
                (up.last ?? resolved.start) + 1
            )
        let described = ([shown] + after).map { packets[$0] ?? (false, 0) }
        return SplitFrames(
            starts: [resolved.start] + up,
            ends: [resolved.start] + down,
            rangeEnd: rangeEnd,
            keyframes: described.map(\.keyframe),
            sizes: described.map(\.size)
        )
    }

    /// Each segment's range: from its first frame's `starts` to the next segment's first
    /// frame's `ends` (the last to the range's end).
    public func ranges(of plan: SplitPlan) -> [TimeRange] {
        plan.segments.map { segment in
            let first = segment.frames.lowerBound
            let next = segment.frames.upperBound
            let from = starts[first]
            let to = next < count ? ends[next] : rangeEnd
            return TimeRange(start: from, duration: to - from)
        }
    }
}
