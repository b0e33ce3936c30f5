import Foundation
import JobctlCore

/// The join of a split export's parts until its proof passes, written once for both drivers
/// (`export --split` in one process, a split job's join on the queue): join; while the proof
/// refuses a segment (`SegmentJoin.Mismatch`), have it encoded again and join again, up to
/// `SplitExport.maximumReencodes` new encodes of one segment.
public struct ProvedJoin: Sendable {
    /// A segment the proof refused once more after its last allowed new encode.
    public struct Refused: Error, Sendable, CustomStringConvertible {
        public var mismatch: SegmentJoin.Mismatch
        public var description: String {
            "the split export's \(mismatch), after \(SplitExport.maximumReencodes) new encodes of it"
        }
    }

    /// The parts as last joined (a segment encoded again has its new frame count).
    public private(set) var parts: [SegmentJoin.Segment]
    /// New encodes of each segment so far, by index (those made before the first join too).
    public private(set) var reencodes: [Int]

    public init(_ parts: [SegmentJoin.Segment], reencodes: [Int]? = nil) {
        self.parts = parts
        self.reencodes = reencodes ?? Array(repeating: 0, count: parts.count)
    }

    /// Joins with `join` until the proof passes, `remake` encoding a refused segment again
    /// (its new frame count, or `nil` to keep the planned one).
    ///
    /// - Throws: `MediaError.cancelled()` once `isCancelled`, `Refused` past the new encodes
    ///   allowed, and whatever `join` and `remake` throw.
    public mutating func run<Joined>(
        isCancelled: () -> Bool,
        join: ([SegmentJoin.Segment]) async throws -> Joined,
        remake: (_ segment: Int) async throws -> Int?
    ) async throws -> Joined {
        while true {
            if isCancelled() { throw MediaError.cancelled() }
            do {
                return try await join(parts)
            } catch let mismatch as SegmentJoin.Mismatch {
                reencodes[mismatch.segment] += 1
                guard reencodes[mismatch.segment] <= SplitExport.maximumReencodes else {
                    throw Refused(mismatch: mismatch)
                }
                if let frames = try await remake(mismatch.segment) { parts[mismatch.segment].frames = frames }
            }
        }
    }
}
