import Foundation
import MediaTestKit
import Testing

@testable import Media

/// Audio formats the `ffmpeg` CLI reads that jobctl refused (issue 42): DSD in DSF and DFF
/// (written by hand: `DSDFiles`), Musepack SV8 (written by Musepack's own encoder). Probed as
/// ffprobe sees them, exported to their end.
@Suite("Audio formats found late", .timeLimit(.minutes(5)))
struct LateAudioFormatTests {
    @Test(arguments: [Fixture.dsf, .dff, .musepackSV8])
    func probesAndExports(_ fixture: Fixture) async throws {
        let path = try await Fixtures.shared.path(fixture)
        let asset = try Asset(location: path)
        let probe = try await FFProbe.probe(path)
        let source = try #require(probe.audio.first)
        #expect(probe.format.format_name == asset.container)
        let track = try #require(asset.audioTracks.first)
        #expect(track.codec == source.codec_name && track.sampleRate == source.sampleRate)
        #expect(track.channels == source.channels)
        let held = try await FFProbe.audioSeconds(path)
        try await withTemporaryDirectory("late-format") { directory in
            let output = directory.file("out.m4a")
            let result = try await ExportChecks.export(path, preset: "m4a", range: nil, to: output)
            let written = try await FFProbe.probe(output)
            #expect(written.audio.first?.codec_name == "aac" && written.audio.first?.channels == 2)
            #expect(abs((written.format.durationSeconds ?? 0) - held) < 0.1, "\(written.format.duration ?? "?") s")
            #expect(result.warnings == nil, "\(result.warnings ?? [])")
            #expect(try await FFProbe.decodeErrors(output) == "")
        }
    }
}
