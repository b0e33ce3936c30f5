import Foundation
import JobctlCore

/// Scene cuts near a split export's boundaries (issue 27): a segment that starts at a cut puts
/// its keyframe where the picture changes anyway, instead of a few frames before or after it
/// (two keyframes close together cost bits, and a cut just after a keyframe is coded as a
/// large P-frame). Only the frames within `window` of each grid boundary are decoded, small and
/// grey.
public enum SceneCuts {
    /// A change from one frame to the next counts as a cut when the mean absolute difference of
    /// their 64x36 luma is above this (0…255), and several times the window's typical change.
    static let threshold = 24.0

    /// The frames (µs, as in `frames.starts`) where a scene starts, at most one per target: the
    /// largest change within `window` of each target, when it is a cut.
    public static func near(
        _ targets: [Int64],
        frames: SplitFrames,
        asset: Asset,
        window: Int64
    ) -> [Int64] {
        guard !targets.isEmpty, frames.count > 1 else { return [] }
        // Every frame within the windows (the first frame of each window is the reference).
        var wanted: [Int] = []
        for target in targets {
            let low = SplitPlan.firstFrame(atOrAfter: target - window, in: frames.starts)
            let high = SplitPlan.firstFrame(atOrAfter: target + window + 1, in: frames.starts)
            wanted += Array(max(0, low - 1)..<high)
        }
        let indices = Array(Set(wanted)).sorted()
        guard let generator = try? ImageGenerator(asset: try Asset(location: asset.location, limits: asset.limits))
        else { return [] }
        generator.requireExactFrames()
        let size = PictureSize(width: 64, height: 36)
        guard let planes = try? generator.lumaPlanes(at: indices.map { frames.starts[$0] }, size: size) else {
            return []
        }
        var luma: [Int: [UInt8]] = [:]
        for (index, plane) in zip(indices, planes) { luma[index] = plane }
        var cuts: [Int64] = []
        for target in targets {
            var changes: [(index: Int, amount: Double)] = []
            for index in indices where abs(frames.starts[index] - target) <= window {
                guard index > 0, let previous = luma[index - 1], let current = luma[index],
                    previous.count == current.count
                else { continue }
                let total = zip(previous, current).reduce(0) { $0 + abs(Int($1.0) - Int($1.1)) }
                changes.append((index, Double(total) / Double(current.count)))
            }
            guard let largest = changes.max(by: { $0.amount < $1.amount }) else { continue }
            let typical = changes.map(\.amount).sorted()[changes.count / 2]
            if largest.amount >= threshold, largest.amount >= 4 * max(typical, 1) {
                cuts.append(frames.starts[largest.index])
            }
        }
        return cuts
    }
}
