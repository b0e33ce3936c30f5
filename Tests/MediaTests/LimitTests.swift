import Foundation
import JobctlCore
import MediaTestKit
import Testing

@testable import Media

/// Small files that claim a lot (docs/spec.md §7): they fail with a code that names what was wrong,
/// and leave nothing behind. Before the limits, the late-audio file encoded an hour of silence
/// (minutes of CPU: the suite's time limit catches a regression), the 8192x8192 picture took
/// gigabytes, and the jumping file declared an hour-long output.
@Suite("Limits", .timeLimit(.minutes(3)))
struct LimitTests {
    struct Case: Sendable, CustomStringConvertible {
        var fixture: Fixture
        var preset: String
        var limits = ResourceLimits.default
        var code: ErrorCode
        var mentions: String
        var description: String { "\(fixture) \(preset)" }
    }

    static let cases: [Case] = [
        Case(fixture: .lateAudio, preset: "low", code: .decodeFailed, mentions: "track 1 starts at 3599.9"),
        Case(
            fixture: .lateAudio,
            preset: "passthrough",
            code: .decodeFailed,
            mentions: "after the other tracks' media ends (2s)"
        ),
        Case(fixture: .lateAudio, preset: "m4a", code: .decodeFailed, mentions: "more than 300s after the start"),
        Case(fixture: .hugeDeclaredDuration, preset: "low", code: .limitExceeded, mentions: "lasts 10000000.0"),
        Case(fixture: .timestampJump, preset: "low", code: .decodeFailed, mentions: "timestamps jump from 2s to 3602s"),
        Case(fixture: .timestampJump, preset: "passthrough", code: .decodeFailed, mentions: "timestamps jump"),
        Case(
            fixture: .hugePicture,
            preset: "highest",
            code: .limitExceeded,
            mentions: "8192x8192 (67108864 pixels), over the limit of 35389440 pixels (--max-pixels"
        ),
        Case(
            fixture: .growingPicture,
            preset: "low",
            code: .limitExceeded,
            mentions: "a picture of track 0 is 8192x8192"
        ),
        Case(fixture: .manyTracks, preset: "m4a", code: .limitExceeded, mentions: "more than 64 streams"),
        Case(
            fixture: .basic,
            preset: "low",
            limits: ResourceLimits(maxPixels: 320 * 239),
            code: .limitExceeded,
            mentions: "320x240 (76800 pixels)"
        ),
        Case(
            fixture: .basic,
            preset: "low",
            limits: ResourceLimits(maxDuration: 3_000_000),
            code: .limitExceeded,
            mentions: "lasts 4s, over the limit of 3s"
        ),
        Case(
            fixture: .basic,
            preset: "low",
            limits: ResourceLimits(maxOutputBytes: 20_000),
            code: .limitExceeded,
            mentions: "larger than 20000 bytes"
        ),
        // Its headers claim 1 s: the ceiling is found while reading.
        Case(
            fixture: .understatedDuration,
            preset: "low",
            limits: ResourceLimits(maxDuration: 2_000_000),
            code: .limitExceeded,
            mentions: "runs past 2s"
        ),
    ]

    @Test(arguments: cases)
    func failsFastWithItsCode(_ test: Case) async throws {
        let input = try await Fixtures.shared.path(test.fixture)
        try await withTemporaryDirectory("limit") { directory in
            let output = directory.file(test.preset == "m4a" ? "out.m4a" : "out.mp4")
            do {
                let asset = try Asset(location: input, limits: test.limits)
                let session = ExportSession(
                    asset: asset,
                    preset: try PresetCatalog.builtIn.preset(named: test.preset),
                    outputPath: output
                )
                let result = try await session.export()
                Issue.record("\(test): expected \(test.code), exported \(result.duration) s")
            } catch let error as MediaError {
                #expect(error.code == test.code, "\(test): \(error)")
                #expect(
                    error.message.contains(test.mentions),
                    "\(test): '\(error.message)' should mention '\(test.mentions)'"
                )
            }
            #expect(directory.contents().isEmpty, "\(test): left \(directory.contents())")
        }
    }

    /// Within the limits, the same inputs export: the limits are ceilings, not filters.
    @Test func raisedLimitsLetTheSameFilesThrough() async throws {
        let input = try await Fixtures.shared.path(.understatedDuration)
        try await withTemporaryDirectory("limit-raised") { directory in
            let output = directory.file("out.mp4")
            let asset = try Asset(location: input, limits: ResourceLimits(maxDuration: 5_000_000))
            let result = try await ExportSession(
                asset: asset,
                preset: try PresetCatalog.builtIn.preset(named: "low"),
                outputPath: output
            ).export()
            #expect(abs(result.duration - 4) < 0.1)
            let copy = directory.file("copy.mov")
            let huge = try Asset(location: try await Fixtures.shared.path(.hugePicture))
            // A copy decodes nothing: the picture limit does not apply.
            _ = try await ExportSession(
                asset: huge,
                preset: try PresetCatalog.builtIn.preset(named: "passthrough"),
                outputPath: copy
            ).export()
            #expect(try await FFProbe.probe(copy).video?.width == 8192)
        }
    }

    /// Probing a file that declares too many streams fails too (it would cost memory per stream).
    @Test func probingRespectsTheTrackLimit() async throws {
        let input = try await Fixtures.shared.path(.manyTracks)
        #expect { try Asset(location: input) } throws: { ($0 as? MediaError)?.code == .limitExceeded }
        #expect(try Asset(location: input, limits: ResourceLimits(maxTracks: 100)).tracks.count == 70)
    }
}
