import Foundation
import JobctlCore
import MediaTestKit
import Testing

@testable import Media

/// Local HLS playlists and DASH manifests (issue 31): a set written by ffmpeg exports like the
/// file it came from; a manifest naming anything outside its own directory is refused with
/// `input_unsupported` and nothing outside is read; a missing segment fails the export rather
/// than completing it short. Outputs checked with ffprobe. (Remote playlists: RemoteMediaTests.)
@Suite("Local manifests", .timeLimit(.minutes(5)))
struct ManifestTests {
    /// 4 s of 320x240 video and a tone, written by ffmpeg as `kind` into `directory/set`, and
    /// a copy of the set in `directory/outside` (for manifests that name files out there).
    static func writeSet(_ kind: String, into directory: TemporaryDirectory) async throws -> String {
        let set = directory.file("set")
        try FileManager.default.createDirectory(atPath: set, withIntermediateDirectories: true)
        let source = [
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
            "sine=f=440:sample_rate=48000", "-t", "4", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25",
            "-pix_fmt", "yuv420p", "-c:a", "aac",
        ]
        switch kind {
        case "hls":
            _ = try await ProcessRunner.check(
                "ffmpeg",
                source + [
                    "-f", "hls", "-hls_time", "1", "-hls_segment_type", "fmp4", "-hls_playlist_type", "vod",
                    "-hls_segment_filename", "\(set)/seg%d.m4s", "\(set)/index.m3u8",
                ]
            )
        default:
            // "dash-numbered": segments by number without a timeline (FFmpeg's DASH reader then
            // asks for one past the last: the end, not a missing segment).
            let numbered = kind == "dash-numbered" ? ["-use_timeline", "0"] : []
            _ = try await ProcessRunner.check(
                "ffmpeg",
                source + ["-f", "dash", "-seg_duration", "1"] + numbered + ["\(set)/manifest.mpd"]
            )
        }
        try FileManager.default.copyItem(atPath: set, toPath: directory.file("outside"))
        return kind == "hls" ? "\(set)/index.m3u8" : "\(set)/manifest.mpd"
    }

    static func expectCompleteExport(_ manifest: String, _ directory: TemporaryDirectory) async throws {
        let output = directory.file("out-\(UUID().uuidString.prefix(6)).mp4")
        _ = try await ExportChecks.export(manifest, preset: "low", range: nil, to: output)
        let probe = try await FFProbe.probe(output)
        #expect(abs((probe.format.durationSeconds ?? 0) - 4.0) < 0.15, "\(probe.format.duration ?? "?")")
        #expect(probe.video?.codec_name == "h264" && probe.audio.first?.codec_name == "aac")
        #expect(try await FFProbe.videoFrameTimes(output).count == 100)
        #expect(try await FFProbe.decodeErrors(output) == "")
    }

    /// The export of `manifest` fails with `code`, mentioning `text`, and writes nothing.
    static func expectRefused(
        _ manifest: String,
        _ directory: TemporaryDirectory,
        code: ErrorCode = .inputUnsupported,
        mentions text: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let output = directory.file("refused.mp4")
        do {
            _ = try await ExportChecks.export(manifest, preset: "low", range: nil, to: output)
            Issue.record("\(manifest) was exported", sourceLocation: sourceLocation)
        } catch let error as MediaError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(text), "\(error.message)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
        #expect(!FileManager.default.fileExists(atPath: output), sourceLocation: sourceLocation)
    }

    /// Rewrites `original` in the text at `path` as `replacement`, its `OUTSIDE` being the
    /// copy of the set outside; the result goes to `destination` (the same file by default).
    static func edit(
        _ path: String,
        _ original: String,
        _ replacement: String,
        in directory: TemporaryDirectory,
        to destination: String? = nil
    ) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let changed = text.replacingOccurrences(
            of: original,
            with: replacement.replacingOccurrences(of: "OUTSIDE", with: directory.file("outside"))
        )
        #expect(changed != text, "the edit changed nothing")
        try Data(changed.utf8).write(to: URL(fileURLWithPath: destination ?? path))
    }

    @Test(arguments: ["hls", "dash", "dash-numbered"])
    func aLocalSetExportsLikeItsSource(kind: String) async throws {
        try await withTemporaryDirectory("manifest-\(kind)") { directory in
            let manifest = try await Self.writeSet(kind, into: directory)
            let asset = try Asset(location: manifest)
            #expect(asset.container == String(kind.prefix(while: { $0 != "-" })))
            try await Self.expectCompleteExport(manifest, directory)
        }
    }

    /// What an HLS playlist may not name, each refused while it is read.
    @Test(arguments: [
        ("a relative path out", "seg2.m4s", "../outside/seg2.m4s"),
        ("an absolute path", "seg2.m4s", "OUTSIDE/seg2.m4s"),
        ("a file: URL out", "seg2.m4s", "file:OUTSIDE/seg2.m4s"),
        ("another protocol", "seg2.m4s", "http://127.0.0.1:9/seg2.m4s"),
        ("an init segment outside", "URI=\"init.mp4\"", "URI=\"OUTSIDE/init.mp4\""),
    ])
    func anHLSPlaylistNamingFilesOutsideIsRefused(
        _ label: String,
        _ original: String,
        _ replacement: String
    )
        async throws
    {
        try await withTemporaryDirectory("hls-out") { directory in
            let manifest = try await Self.writeSet("hls", into: directory)
            try Self.edit(manifest, original, replacement, in: directory)
            await Self.expectRefused(manifest, directory, mentions: "may name only files in its own directory")
        }
    }

    /// A symbolic link beside the playlist that leads out is not followed.
    @Test(arguments: ["hls", "dash"])
    func aLinkLeadingOutIsRefused(kind: String) async throws {
        try await withTemporaryDirectory("link-out") { directory in
            let manifest = try await Self.writeSet(kind, into: directory)
            let outside = directory.file("outside")
            let segment = kind == "hls" ? "seg2.m4s" : "chunk-stream0-00002.m4s"
            try FileManager.default.removeItem(atPath: directory.file("set/\(segment)"))
            try FileManager.default.createSymbolicLink(
                atPath: directory.file("set/\(segment)"),
                withDestinationPath: "\(outside)/\(segment)"
            )
            await Self.expectRefused(
                manifest,
                directory,
                mentions: kind == "hls" ? "no link leading out" : "a link leading outside it"
            )
        }
    }

    /// A segment the playlist names that is not there fails the export (the playlist reader
    /// would skip it and the output would miss a second), the last one too.
    @Test(arguments: [
        ("hls", "seg2.m4s", "seg2.m4s"), ("hls", "seg3.m4s", "seg3.m4s"),
        ("dash", "chunk-stream0-00002.m4s", "a fragment"), ("dash", "chunk-stream0-00004.m4s", "a fragment"),
    ])
    func aMissingSegmentFailsTheExport(kind: String, segment: String, mention: String) async throws {
        try await withTemporaryDirectory("missing") { directory in
            let manifest = try await Self.writeSet(kind, into: directory)
            try FileManager.default.removeItem(atPath: directory.file("set/\(segment)"))
            await Self.expectRefused(manifest, directory, code: .inputUnreadable, mentions: mention)
        }
    }

    /// What a DASH manifest may not name or be, each refused before FFmpeg reads it.
    @Test(arguments: [
        ("a relative path out", "media=\"chunk", "media=\"../outside/chunk", "'..' segment"),
        ("an absolute path", "initialization=\"init", "initialization=\"OUTSIDE/init", "an absolute path"),
        ("a base URL", "<Period ", "<BaseURL>http://127.0.0.1:9/</BaseURL><Period ", "a URL"),
        ("a live manifest", "type=\"static\"", "type=\"dynamic\"", "live (dynamic)"),
        ("a document type", "?>", "?><!DOCTYPE MPD [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>", "document type"),
        (
            "an external link", "<Period ", "<Period xlink:href=\"http://127.0.0.1:9/p.xml\" ",
            "links to other documents"
        ),
        // FFmpeg matches names without case or namespace: so must the check.
        ("a lowercase base URL", "<Period ", "<baseurl>http://127.0.0.1:9/</baseurl><Period ", "a URL"),
        (
            "a prefixed base URL", "<Period ", "<q:BaseURL xmlns:q=\"urn:q\">../outside/</q:BaseURL><Period ",
            "'..' segment"
        ),
        ("a base URL in CDATA", "<Period ", "<BaseURL><![CDATA[OUTSIDE/]]></BaseURL><Period ", "an absolute path"),
        (
            "a prefixed template", "media=\"chunk", "xmlns:q=\"urn:q\" q:media=\"../outside/x\" media=\"chunk",
            "'..' segment"
        ),
        ("a live manifest in capitals", "type=\"static\"", "TYPE=\"Dynamic\"", "live (dynamic)"),
        // Templates put these into paths: $Bandwidth$ and $RepresentationID$.
        ("a bandwidth that is a path", "bandwidth=\"760164\"", "bandwidth=\"../outside/1\"", "is not a number"),
        ("an id that is a path", "<Representation id=\"0\"", "<Representation id=\"../outside/0\"", "not a plain name"),
        ("an unknown template identifier", "$Number%05d$", "$Nope$/../../outside/x", "'..' segment"),
    ])
    func aDASHManifestNamingFilesOutsideIsRefused(
        _ label: String,
        _ original: String,
        _ replacement: String,
        _ mention: String
    ) async throws {
        try await withTemporaryDirectory("dash-out") { directory in
            let manifest = try await Self.writeSet("dash", into: directory)
            try Self.edit(manifest, original, replacement, in: directory)
            await Self.expectRefused(manifest, directory, mentions: mention)
        }
    }

    /// A DASH segment that is itself a manifest (FFmpeg's DASH reader would read it as one,
    /// and open what it names without asking jobctl) is refused.
    @Test func aDASHSegmentThatIsAManifestIsRefused() async throws {
        try await withTemporaryDirectory("dash-nested") { directory in
            let manifest = try await Self.writeSet("dash", into: directory)
            let initSegment = directory.file("set/init-stream0.m4s")
            try Self.edit(
                manifest,
                "initialization=\"init",
                "initialization=\"OUTSIDE/init",
                in: directory,
                to: initSegment
            )
            try Self.edit(initSegment, "media=\"chunk", "media=\"OUTSIDE/chunk", in: directory)
            await Self.expectRefused(manifest, directory, mentions: "another manifest")
        }
    }

    /// A multivariant playlist: the export reads one variant, the largest picture and the
    /// audio that plays with it (not every variant's tracks).
    @Test func aMultivariantPlaylistExportsItsLargestVariant() async throws {
        try await withTemporaryDirectory("multivariant") { directory in
            let set = directory.file("set")
            try FileManager.default.createDirectory(atPath: set, withIntermediateDirectories: true)
            _ = try await ProcessRunner.check(
                "ffmpeg",
                [
                    "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-f", "lavfi",
                    "-i",
                    "sine=f=440:sample_rate=48000", "-t", "3", "-map", "0:v", "-map", "1:a", "-map", "0:v", "-map",
                    "1:a",
                    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-s:v:0", "320x180", "-s:v:1",
                    "640x360", "-c:a", "aac", "-b:a:0", "48k", "-b:a:1", "128k", "-f", "hls", "-hls_time", "1",
                    "-hls_playlist_type", "vod", "-hls_segment_type", "fmp4", "-master_pl_name", "master.m3u8",
                    "-var_stream_map", "v:0,a:0 v:1,a:1", "-hls_segment_filename", "\(set)/v%v_%d.m4s",
                    "-hls_fmp4_init_filename", "init_%v.mp4", "\(set)/v%v.m3u8",
                ]
            )
            let asset = try Asset(location: "\(set)/master.m3u8")
            #expect(asset.tracks.count == 4)
            #expect(asset.primaryVideoTrack?.width == 640)
            #expect(asset.audioTracks.count == 1)
            let output = directory.file("out.mp4")
            _ = try await ExportChecks.export("\(set)/master.m3u8", preset: "passthrough", range: nil, to: output)
            let probe = try await FFProbe.probe(output)
            #expect(probe.streams.count == 2)
            #expect(probe.video?.width == 640)
            #expect((probe.audio.first?.bit_rate.flatMap(Int.init) ?? 0) > 96_000, "the 128k audio, not the 48k")
        }
    }

    /// A manifest larger than 4 MB is refused before it is read.
    @Test func aHugePlaylistIsRefused() async throws {
        try await withTemporaryDirectory("huge") { directory in
            let manifest = try await Self.writeSet("hls", into: directory)
            var text = try String(contentsOfFile: manifest, encoding: .utf8)
            text = text.replacingOccurrences(
                of: "#EXT-X-ENDLIST",
                with: String(repeating: "#EXTINF:1.0,\nseg0.m4s\n", count: 250_000) + "#EXT-X-ENDLIST"
            )
            try Data(text.utf8).write(to: URL(fileURLWithPath: manifest))
            await Self.expectRefused(manifest, directory, mentions: "larger than 4 MB")
        }
    }

    /// Segments given as byte ranges of one file (FFmpeg 5.1's DASH reader misreads them and
    /// never finishes) are refused before reading, naming the file to export instead.
    @Test func aDASHSegmentListOfByteRangesIsRefused() async throws {
        try await withTemporaryDirectory("dash-ranges") { directory in
            _ = try await Self.writeSet("dash", into: directory)
            let manifest = directory.file("set/ranged.mpd")
            try Data(
                """
                <?xml version="1.0"?>
                <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT1S">
                <Period><AdaptationSet mimeType="video/mp4"><Representation id="v" bandwidth="1000">
                <BaseURL>chunk-stream0-00001.m4s</BaseURL>
                <SegmentList timescale="1000" duration="1000"><Initialization range="0-99"/>
                <SegmentURL mediaRange="100-2000"/></SegmentList>
                </Representation></AdaptationSet></Period></MPD>
                """.utf8
            ).write(to: URL(fileURLWithPath: manifest))
            await Self.expectRefused(manifest, directory, mentions: "byte ranges of one file")
            await Self.expectRefused(manifest, directory, mentions: "export 'chunk-stream0-00001.m4s' itself")
        }
    }

    /// A manifest with two periods exports the one FFmpeg reads, and says so in a warning.
    @Test func aDASHManifestWithTwoPeriodsWarns() async throws {
        try await withTemporaryDirectory("dash-periods") { directory in
            let manifest = try await Self.writeSet("dash", into: directory)
            var text = try String(contentsOfFile: manifest, encoding: .utf8)
            let period = try #require(text.range(of: #"<Period[\s\S]*</Period>"#, options: .regularExpression))
            text.insert(
                contentsOf: text[period].replacingOccurrences(
                    of: "id=\"0\" start=\"PT0.0S\"",
                    with: "id=\"1\" start=\"PT4.0S\""
                ),
                at: period.upperBound
            )
            try Data(text.utf8).write(to: URL(fileURLWithPath: manifest))
            let result = try await ExportChecks.export(
                manifest,
                preset: "low",
                range: nil,
                to: directory.file("out.mp4")
            )
            #expect(result.warnings?.first?.contains("has 2 periods") == true, "\(result.warnings ?? [])")
            let probe = try await FFProbe.probe(directory.file("out.mp4"))
            #expect(abs((probe.format.durationSeconds ?? 0) - 4.0) < 0.15, "\(probe.format.duration ?? "?")")
        }
    }

    /// A live playlist (no end tag) that has stopped growing exports from its first segment,
    /// not from three before its end, and ends after a few reloads.
    @Test func aLivePlaylistThatStoppedGrowingExportsFromItsStart() async throws {
        try await withTemporaryDirectory("hls-live") { directory in
            let manifest = try await Self.writeSet("hls", into: directory)
            try Self.edit(manifest, "#EXT-X-ENDLIST", "", in: directory)
            try Self.edit(manifest, "#EXT-X-PLAYLIST-TYPE:VOD", "", in: directory)
            try await Self.expectCompleteExport(manifest, directory)
        }
    }
}
