import Foundation
import JobctlCore

/// Scene cuts near a split export's boundaries (issue 27): a segment that starts at a cut puts
/// its keyframe where the picture changes anyway, instead of a few frames before or after it
/// (two keyframes close together cost bits, and a cut just after a keyframe is coded as a
/// large P-frame). Only the frames within `window` of each grid boundary are decoded, small and
/// grey, and only near a boundary where the source's packets hint at a cut (`mayHoldCut`):
/// decoding there is serial work before any segment starts.
public enum SceneCuts {
    /// A change from one frame to the next counts as a cut when the mean absolute difference of
    /// their 64x36 luma is above this (0…255), and several times the window's typical change.
    static let threshold = 24.0

    /// The frames (µs, as in `frames.starts`) where a scene starts, at most one per target: the
    /// largest change within `window` of each target, when it is a cut.
    public static func near(
        _ candidates: [Int64],
        frames: SplitFrames,
        asset: Asset,
        window: Int64
    ) -> [Int64] {
        let targets = candidates.filter { mayHoldCut(near: $0, frames: frames, window: window) }
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

    /// An inter frame at least this many times the window's usual inter frame (its 90th
    /// percentile, so that small B-frames do not set the scale) may be a cut: a new picture
    /// predicts badly from the one before.
    static let largeFrame = 3.0

    /// Whether the source's packets near `target` hint at a cut, without decoding: a keyframe
    /// other than the boundary's own frame (encoders put one at a cut), an inter frame much
    /// larger than the others, or too few inter frames to tell (an all-intra source). With no
    /// hint, the window is not decoded and the boundary stays on the grid. Without packet
    /// facts, always.
    static func mayHoldCut(near target: Int64, frames: SplitFrames, window: Int64) -> Bool {
        guard frames.keyframes.count == frames.count, frames.sizes.count == frames.count else { return true }
        let low = max(1, SplitPlan.firstFrame(atOrAfter: target - window, in: frames.starts))
        let high = SplitPlan.firstFrame(atOrAfter: target + window + 1, in: frames.starts)
        guard low < high else { return false }
        let boundary = SplitPlan.firstFrame(atOrAfter: target, in: frames.starts)
        let window = low..<high
        if window.contains(where: { $0 != boundary && frames.keyframes[$0] }) { return true }
        let inter = window.filter { !frames.keyframes[$0] }.map { frames.sizes[$0] }.sorted()
        guard inter.count >= 4 else { return true }
        let usual = Double(max(inter[inter.count * 9 / 10], 1))
        return Double(inter.last!) >= largeFrame * usual
    }
}
