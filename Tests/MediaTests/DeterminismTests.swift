import Foundation
import Media
import MediaTestKit
import Testing

/// The same export, run again, is the same file, byte for byte (docs/decisions.md #153): an
/// upload's next attempt keeps the parts an earlier one sent only when they are the same bytes
/// (docs/operations.md, "Resumable"), and a result should not depend on the machine's load.
@Suite("Repeatable exports", .timeLimit(.minutes(10)))
struct DeterminismTests {
    /// A slide show: x264's lookahead holds 20 s of its pictures, so its audio reaches the muxer
    /// far ahead of its video. The tracks' threads used to hand the muxer their packets as
    /// they came, and FFmpeg's interleaver stops waiting for a track 10 s behind: where it did
    /// depended on the timing, and 5 runs gave 5 different files (the same packets, laid out
    /// differently). x264 with CRF and x265 are deterministic with frame threads; x264 with a
    /// target bit rate (`low`) is only with slice threads (docs/ffmpeg.md #27).
    @Test(
        arguments: [
            ("low", nil), ("highest", "3.3s+30s"), ("hevc-highest", "10s+12s"), ("passthrough", nil),
        ] as [(String, String?)]
    )
    func theSameExportIsTheSameBytes(preset: String, range: String?) async throws {
        let input = try await Fixtures.shared.path(.slideshow)
        try await withTemporaryDirectory("repeatable-\(preset)") { directory in
            let first = directory.file("0.mp4")
            _ = try await ExportChecks.export(input, preset: preset, range: range, to: first)
            for run in 1..<3 {
                let again = directory.file("\(run).mp4")
                _ = try await ExportChecks.export(input, preset: preset, range: range, to: again)
                #expect(
                    FileManager.default.contentsEqual(atPath: first, andPath: again),
                    "\(preset) \(range ?? "all"): run \(run) differs from run 0"
                )
            }
            #expect(try await FFProbe.decodeErrors(first) == "")
        }
    }
}
