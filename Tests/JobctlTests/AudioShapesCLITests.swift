import Foundation
import MediaTestKit
import Testing

/// Issue 42 as a user meets it: `jobctl probe`, `export` and `waveform` on audio whose headers
/// claim more than its media holds, and on the formats found late (DSD, Musepack). ffprobe
/// and ffmpeg say what each file holds and what was written.
@Suite("Audio shapes from the command line", .timeLimit(.minutes(5)))
struct AudioShapesCLITests {
    struct Case: Sendable, CustomStringConvertible {
        var fixture: Fixture
        /// Whether its headers claim more than it holds (the export then warns).
        var overstated: Bool
        var description: String { "\(fixture)" }
    }

    static let cases = [
        Case(fixture: .mp3InfoOverstated, overstated: true),
        Case(fixture: .mp3VBRIOverstated, overstated: true),
        Case(fixture: .flacTotalOverstated, overstated: true),
        Case(fixture: .opusGranuleOverstated, overstated: true),
        Case(fixture: .mp3APETagged, overstated: false),
        Case(fixture: .flacVariableBlocks, overstated: false),
        Case(fixture: .dsf, overstated: false),
        Case(fixture: .dff, overstated: false),
        Case(fixture: .musepackSV8, overstated: false),
    ]

    @Test(arguments: cases)
    func probeExportAndWaveform(_ test: Case) async throws {
        let input = try await Fixtures.shared.path(test.fixture)
        let source = try await FFProbe.probe(input)
        let audio = try #require(source.audio.first)
        let rate = try #require(audio.sampleRate)
        let held = try await FFProbe.audioSeconds(input)

        let probe = try await Jobctl.run(["probe", input, "--json"])
        #expect(probe.status == 0, "\(test): \(probe.stderr)")
        let report = try #require(try Jobctl.json(probe) as? [String: Any])
        #expect(report["container"] as? String == source.format.format_name)
        let track = try #require((report["tracks"] as? [[String: Any]])?.first)
        #expect(track["codec"] as? String == audio.codec_name && track["sampleRate"] as? Int == rate)
        #expect(track["channels"] as? Int == audio.channels)

        try await withTemporaryDirectory("audio-shapes") { directory in
            let output = directory.file("out.m4a")
            let export = try await Jobctl.run(["export", input, "--preset", "m4a", "-o", output, "--json"])
            #expect(export.status == 0, "\(test): \(export.stderr)")
            let result = try #require(try Jobctl.json(export) as? [String: Any])
            let written = try await FFProbe.probe(output)
            #expect(
                abs((written.format.durationSeconds ?? 0) - held) < 0.1,
                "\(test): \(written.format.duration ?? "?")"
            )
            #expect(abs((result["duration"] as? Double ?? 0) - held) < 0.1)
            let warnings = result["warnings"] as? [String] ?? []
            #expect(
                warnings.contains { $0.contains("exported what it holds") } == test.overstated,
                "\(test): \(warnings)"
            )
            #expect(try await FFProbe.decodeErrors(output) == "")

            let peaks = directory.file("peaks.json")
            let waveform = try await Jobctl.run(["waveform", input, "-o", peaks, "--samples-per-pixel", "512"])
            #expect(waveform.status == 0, "\(test): \(waveform.stderr)")
            let json = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: peaks))) as? [String: Any]
            )
            // One column per 512 samples of what the file holds, the last one partial.
            let columns = Int((held * Double(rate) / 512).rounded(.up))
            #expect(json["sample_rate"] as? Int == rate)
            #expect(abs((json["length"] as? Int ?? 0) - columns) <= 1, "\(test): \(json["length"] ?? "?") columns")
        }
    }
}
