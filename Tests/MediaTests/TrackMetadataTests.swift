import Foundation
import MediaTestKit
import Testing

@testable import Media

/// What a player shows of each track survives an export (issue 44): its language, its name
/// and which track is the default, checked with ffprobe.
@Suite("Track names and languages", .timeLimit(.minutes(3)))
struct TrackMetadataTests {
    struct Described: Equatable, CustomStringConvertible {
        var type: String
        var language: String?
        var name: String?
        var isDefault: Bool
        var description: String { "\(type) \(language ?? "-") '\(name ?? "-")' default=\(isDefault)" }
    }

    /// Each stream's type, language, name (`title`, else MP4's handler name) and default flag.
    static func described(_ path: String) async throws -> [Described] {
        try await FFProbe.probe(path).streams.map { stream in
            Described(
                type: stream.codec_type,
                language: stream.tags?["language"],
                name: stream.tags?["title"] ?? stream.tags?["handler_name"],
                isDefault: stream.disposition?["default"] == 1
            )
        }
    }

    static func export(_ input: String, preset: String, to output: String) async throws {
        let asset = try Asset(location: input)
        _ = try await ExportSession(
            asset: asset,
            preset: try PresetCatalog.builtIn.preset(named: preset),
            outputPath: output
        ).export()
    }

    @Test("a two-language file keeps each track's language and which one is the default")
    func languages() async throws {
        try await withTemporaryDirectory("languages") { directory in
            let output = directory.file("low.mp4")
            try await Self.export(try await Fixtures.shared.path(.multiAudio), preset: "low", to: output)
            let audio = try await Self.described(output).filter { $0.type == "audio" }
            #expect(audio.map(\.language) == ["eng", "fra"], "\(audio)")
            #expect(audio.map(\.isDefault) == [true, false], "\(audio)")
        }
    }

    @Test("named tracks keep their names, re-encoded and copied alike")
    func names() async throws {
        try await withTemporaryDirectory("names") { directory in
            let input = directory.file("named.mkv")
            _ = try await ProcessRunner.check(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi",
                    "-i", "sine=frequency=440:sample_rate=48000", "-f", "lavfi", "-i",
                    "sine=frequency=660:sample_rate=48000", "-t", "2", "-map", "0:v", "-map", "1:a", "-map", "2:a",
                    "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-metadata:s:v:0", "title=Camera 1",
                    "-metadata:s:a:0", "title=English", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1",
                    "title=Commentary", "-metadata:s:a:1", "language=spa", "-disposition:a:1", "0", input,
                ]
            )
            for preset in ["low", "passthrough"] {
                let output = directory.file("\(preset).mov")
                try await Self.export(input, preset: preset, to: output)
                let streams = try await Self.described(output)
                #expect(streams.map(\.name) == ["Camera 1", "English", "Commentary"], "\(preset): \(streams)")
                #expect(streams.map(\.language) == [nil, "eng", "spa"], "\(preset): \(streams)")
                #expect(streams.filter { $0.type == "audio" }.map(\.isDefault) == [true, false], "\(preset)")
            }
        }
    }
}
