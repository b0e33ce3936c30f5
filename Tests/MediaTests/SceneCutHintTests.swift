import Testing

@testable import Media

/// Which boundaries of a split plan are worth decoding to look for a scene cut (issue 27): the
/// decision is made from the source's packets alone (`SceneCuts.mayHoldCut`), since the
/// decoding is serial work before any segment starts.
@Suite("Scene cut hints")
struct SceneCutHintTests {
    /// 30 fps for 10 s: a keyframe every `gop` frames, every packet `size` bytes but those
    /// listed in `sizes`, and keyframes added at `extraKeyframes`.
    static func frames(gop: Int, size: Int = 5_000, sizes: [Int: Int] = [:], extraKeyframes: [Int] = []) -> SplitFrames
    {
        let starts = (0..<300).map { Int64($0) * 1_000_000 / 30 }
        var frames = SplitFrames(starts: starts, ends: starts, rangeEnd: 10_000_000)
        frames.keyframes = starts.indices.map { $0 % gop == 0 || extraKeyframes.contains($0) }
        frames.sizes = starts.indices.map { frames.keyframes[$0] ? 40_000 : sizes[$0] ?? size }
        return frames
    }

    @Test("a regular stream with its keyframe on the boundary: nothing to decode")
    func keyframeOnTheBoundary() {
        #expect(!SceneCuts.mayHoldCut(near: 4_000_000, frames: Self.frames(gop: 60), window: 1_000_000))
    }

    @Test("a keyframe elsewhere in the window (an encoder's scene cut), or a keyframe every frame: decode")
    func keyframesNearby() {
        let scene = Self.frames(gop: 300, extraKeyframes: [138])  // 4.6 s
        #expect(SceneCuts.mayHoldCut(near: 4_000_000, frames: scene, window: 1_000_000))
        // The same keyframe beyond the window (1 s) is no hint.
        #expect(!SceneCuts.mayHoldCut(near: 2_000_000, frames: scene, window: 1_000_000))
        #expect(SceneCuts.mayHoldCut(near: 4_000_000, frames: Self.frames(gop: 1), window: 1_000_000))
    }

    @Test("an inter frame three times the usual size (a new picture predicted from the old): decode")
    func largeInterFrame() {
        let window: Int64 = 1_000_000
        #expect(
            SceneCuts.mayHoldCut(near: 4_000_000, frames: Self.frames(gop: 300, sizes: [130: 15_000]), window: window)
        )
        #expect(
            !SceneCuts.mayHoldCut(near: 4_000_000, frames: Self.frames(gop: 300, sizes: [130: 14_000]), window: window)
        )
        // B-frames a fifth the size of the P-frames do not make every P-frame look large.
        let pyramid = Dictionary(uniqueKeysWithValues: (1..<300).filter { $0 % 4 != 0 }.map { ($0, 1_000) })
        #expect(!SceneCuts.mayHoldCut(near: 4_000_000, frames: Self.frames(gop: 300, sizes: pyramid), window: window))
    }

    @Test("without packet facts (not scanned), every window is decoded")
    func unknownPackets() {
        let starts = (0..<300).map { Int64($0) * 1_000_000 / 30 }
        let frames = SplitFrames(starts: starts, ends: starts, rangeEnd: 10_000_000)
        #expect(SceneCuts.mayHoldCut(near: 4_000_000, frames: frames, window: 1_000_000))
    }
}
