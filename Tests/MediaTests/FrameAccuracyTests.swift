import Foundation
import Media
import MediaTestKit
import Testing

/// The source's frames are each a different flat grey (frame n has luma 16 + 2n, 25 fps,
/// a keyframe every 10 frames), so every output frame says which source frame it is.
@Suite("Frame accuracy (docs/spec.md §2)", .timeLimit(.minutes(5)))
struct FrameAccuracyTests {
    struct Case: Sendable, CustomStringConvertible {
        var range: String
        var firstFrame: Int
        var frames: Int
        var description: String { "\(range) → frames \(firstFrame)..<\(firstFrame + frames)" }
    }

    static let cases = [
        Case(range: "1s+2s", firstFrame: 25, frames: 50),  // on a frame boundary
        Case(range: "1.02s+1s", firstFrame: 25, frames: 26),  // between frames: the one shown at 1.02 s first
        Case(range: "1.48s+400ms", firstFrame: 37, frames: 10),  // mid-GOP (keyframe at frame 30)
        Case(range: "0-0.2", firstFrame: 0, frames: 5),
        Case(range: "0:02.5", firstFrame: 62, frames: 38),  // to the end
        Case(range: "3.9s+5s", firstFrame: 97, frames: 3),  // clipped to the asset
    ]

    @Test(arguments: [Fixture.greyRamp, .greyRampTS], cases)
    func firstFrameIsTheOneShownAtTheStart(fixture: Fixture, test: Case) async throws {
        let source = try await Fixtures.shared.path(fixture)
        let reference = try await FFProbe.lumaMeans(source)
        try #require(reference.count == 100)
        try await withTemporaryDirectory("frames") { directory in
            let output = directory.file("out.mp4")
            let result = try await ExportChecks.export(source, preset: "low", range: test.range, to: output)
            let frames = try await FFProbe.lumaMeans(output).map { mean in
                reference.indices.min { abs(reference[$0] - mean) < abs(reference[$1] - mean) }!
            }
            #expect(frames == Array(test.firstFrame..<test.firstFrame + test.frames), "\(fixture) \(test)")
            #expect(result.tracks.first?.frames == Int64(test.frames))
            let range = try TimeRange(parsing: test.range)
            #expect(abs(result.actualRange.start - Double(range.start) / 1e6) < 1e-6)
        }
    }

    /// Passthrough cannot cut between keyframes: it starts at the keyframe at or before START.
    @Test(arguments: [Fixture.greyRamp, .greyRampTS])
    func passthroughStartsAtTheKeyframeBefore(fixture: Fixture) async throws {
        let source = try await Fixtures.shared.path(fixture)
        let reference = try await FFProbe.lumaMeans(source)
        try await withTemporaryDirectory("keyframes") { directory in
            let output = directory.file("out.mp4")
            let result = try await ExportChecks.export(source, preset: "passthrough", range: "1.48s+0.4s", to: output)
            let frames = try await FFProbe.lumaMeans(output).map { mean in
                reference.indices.min { abs(reference[$0] - mean) < abs(reference[$1] - mean) }!
            }
            #expect(
                frames.first == 30,
                "\(fixture): starts at frame \(frames.first ?? -1), the keyframe at or before 1.48 s is frame 30"
            )
            #expect(abs(result.actualRange.start - 1.2) < 0.001)
            #expect((frames.last ?? 0) >= 46, "\(fixture): ends before 1.88 s")
            let video = try #require(try await FFProbe.probe(output).video)
            #expect(abs(video.startSeconds ?? -1) < 0.001)
        }
    }

    /// Audio is cut to the sample and stays in sync: clicks at 1.5 s and 2.5 s in the source are at
    /// 0.5 s and 1.5 s in a 1s+2s export, and the frame on screen then is the one of 1.5 s.
    @Test func audioIsSampleAccurateAndInSync() async throws {
        let source = try await Fixtures.shared.path(.impulses)
        let sourcePeaks = try await FFProbe.audioPeaks(source, count: 2)
        try #require(sourcePeaks.count == 2 && abs(sourcePeaks[0] - 1.5) < 1e-4 && abs(sourcePeaks[1] - 2.5) < 1e-4)
        try await withTemporaryDirectory("sync") { directory in
            for preset in ["low", "m4a"] {
                let output = directory.file("out-\(preset).\(preset == "m4a" ? "m4a" : "mp4")")
                _ = try await ExportChecks.export(source, preset: preset, range: "1s+2s", to: output)
                let peaks = try await FFProbe.audioPeaks(output, count: 2)
                #expect(peaks.count == 2, "\(preset)")
                for (peak, expected) in zip(peaks, [0.5, 1.5]) {
                    // AAC smears a click over a few samples; 1 ms is 44 samples.
                    #expect(abs(peak - expected) < 0.001, "\(preset): click at \(peak), expected \(expected)")
                }
                let samples = try await FFProbe.audioSampleCount(output)
                #expect(abs(samples - 88200) <= 1024, "\(preset): \(samples) samples for 2 s")
            }
        }
    }
}
