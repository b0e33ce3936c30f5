import JobctlCore

/// `--split auto|off|DURATION` (issue 27): whether one export is cut into segments that encode
/// apart (on several workers, or a pool of one process) and join into one file.
public enum SplitRequest: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Split an input longer than twice the default segment length when more than one worker
    /// is alive; never a short one.
    case auto
    case off
    /// Always split, in segments of about this many µs.
    case segments(Int64)

    /// The segment length `auto` uses: 60 s.
    public static let defaultSegmentLength: Int64 = 60_000_000
    /// The shortest segment asked for: 4 s. Each segment costs a claim, a start, its scratch
    /// file, up to 2 s of pre-roll encoded and 2.5 s of post-roll decoded, then dropped
    /// (`SplitExport.encode`): a 1 s segment would cost its submitter up to 3 times the CPU of
    /// the export.
    public static let shortestSegment: Int64 = 4_000_000

    /// `auto`, `off`, or a duration in `--range`'s grammar (`4s`, `1:00`, `90`).
    public init(parsing text: String) throws(MediaError) {
        switch text.lowercased() {
        case "auto": self = .auto
        case "off": self = .off
        default:
            let length: Int64
            do {
                length = try TimeRange.parseTime(Substring(text), in: text)
            } catch {
                throw .invalidOption("split", "is auto, off or a segment length such as 60s, not '\(text.prefix(40))'")
            }
            guard (Self.shortestSegment...TimeRange.longest).contains(length) else {
                throw .invalidOption("split", "is a segment length of at least 4 s")
            }
            self = .segments(length)
        }
    }

    public var description: String {
        switch self {
        case .auto: "auto"
        case .off: "off"
        case .segments(let length): TimeRange.format(length)
        }
    }

    /// The segment length for an export of `duration` µs with `aliveWorkers` workers, or `nil`
    /// when it runs whole.
    public func segmentLength(duration: Int64, aliveWorkers: Int) -> Int64? {
        switch self {
        case .off: nil
        case .segments(let length): length
        case .auto:
            duration > 2 * Self.defaultSegmentLength && aliveWorkers > 1 ? Self.defaultSegmentLength : nil
        }
    }
}

/// Where an export is cut: segments of whole frames, each starting on the keyframe grid (a
/// multiple of the keyframe interval from the range's first frame, so the joined file is also
/// cut-ready for HLS), moved to a scene cut when one is within half an interval, the last one
/// merged into its neighbour when it would be shorter than half a segment. Pure: the frame
/// times come from a demux pass, the scene cuts (optional) from a decode.
public struct SplitPlan: Sendable, Hashable, Codable {
    public struct Segment: Sendable, Hashable, Codable {
        public var index: Int
        /// The segment's frames, as indices into the range's frames in presentation order.
        public var frames: Range<Int>
        /// The presentation time (µs, the asset's clock) of its first frame, and where it ends:
        /// the next segment's first frame, or the range's end.
        public var start: Int64
        public var end: Int64

        public var frameCount: Int { frames.count }

        public init(index: Int, frames: Range<Int>, start: Int64, end: Int64) {
            self.index = index
            self.frames = frames
            self.start = start
            self.end = end
        }
    }

    public var segments: [Segment]

    public init(segments: [Segment]) { self.segments = segments }

    /// The plan for frames at `frameTimes` (µs, presentation order, strictly increasing; the
    /// first is the range's start) up to `rangeEnd`, in segments of about `segmentLength`
    /// rounded to whole keyframe intervals (at least one).
    public static func make(
        frameTimes: [Int64],
        rangeEnd: Int64,
        segmentLength: Int64,
        keyframeInterval: Int64,
        sceneCuts: [Int64] = []
    ) throws(MediaError) -> SplitPlan {
        guard let first = frameTimes.first, let last = frameTimes.last, rangeEnd > last else {
            throw MediaError(.invalidRequest, "a split needs at least one frame before the range's end")
        }
        guard segmentLength > 0, keyframeInterval > 0 else {
            throw MediaError(.invalidRequest, "a split needs a segment length and a keyframe interval above zero")
        }
        guard zip(frameTimes, frameTimes.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw MediaError(.invalidRequest, "the frame times of a split are not strictly increasing")
        }
        let step = max(1, (segmentLength + keyframeInterval / 2) / keyframeInterval) * keyframeInterval
        let cuts = sceneCuts.sorted()
        var boundaries: [Int] = [0]
        var target = first + step
        while target <= last {
            var at = target
            // The nearest scene cut within half a keyframe interval, if any.
            let near = cuts.filter { abs($0 - target) <= keyframeInterval / 2 }
            if let cut = near.min(by: { abs($0 - target) < abs($1 - target) }) { at = cut }
            let index = Self.firstFrame(atOrAfter: at, in: frameTimes)
            if index < frameTimes.count, index > boundaries[boundaries.count - 1] { boundaries.append(index) }
            target += step
        }
        // A last segment shorter than half a segment joins the one before.
        if boundaries.count > 1, rangeEnd - frameTimes[boundaries[boundaries.count - 1]] < step / 2 {
            boundaries.removeLast()
        }
        var segments: [Segment] = []
        for (index, start) in boundaries.enumerated() {
            let next = index + 1 < boundaries.count ? boundaries[index + 1] : frameTimes.count
            segments.append(
                Segment(
                    index: index,
                    frames: start..<next,
                    start: frameTimes[start],
                    end: next < frameTimes.count ? frameTimes[next] : rangeEnd
                )
            )
        }
        return SplitPlan(segments: segments)
    }

    /// The index of the first frame at or after `time` (`count` when there is none).
    static func firstFrame(atOrAfter time: Int64, in times: [Int64]) -> Int {
        var (low, high) = (0, times.count)
        while low < high {
            let middle = (low + high) / 2
            if times[middle] < time { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
