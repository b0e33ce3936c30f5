import Foundation
import MediaTestKit
import Streaming
import Testing

/// `LadderPackage` on a ladder of CMAF renditions made by the `ffmpeg` CLI (two video rungs with
/// keyframes every 2 s at the same times, one AAC rendition): the playlists and the manifest it
/// writes are held to ffmpeg (its own EXTINFs, and decoding through them) and to ffprobe.
@Suite("Ladder package against ffmpeg", .serialized)
struct LadderPackageTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=13"]

    /// One rendition, flat in `root` as jobctl lays a ladder out (`NAME-init.mp4`,
    /// `NAME-00001.m4s`…), with ffmpeg's own playlist as `NAME.ffmpeg.m3u8`.
    static func rendition(_ root: String, _ name: String, _ arguments: [String]) async throws -> [String] {
        _ = try await ProcessRunner.check(
            "ffmpeg",
            ["-v", "error", "-y"] + arguments + [
                "-f", "hls", "-hls_time", "6", "-hls_segment_type", "fmp4", "-hls_playlist_type", "vod",
                "-start_number", "1", "-hls_fmp4_init_filename", "\(name)-init.mp4",
                "-hls_segment_filename", "\(root)/\(name)-%05d.m4s", "\(root)/\(name).ffmpeg.m3u8",
            ]
        )
        return try FileManager.default.contentsOfDirectory(atPath: root).filter {
            $0.hasPrefix("\(name)-") && $0.hasSuffix(".m4s")
        }.sorted()
    }

    static func extinfs(_ path: String) throws -> [Double] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("#EXTINF:") }
            .compactMap { Double($0.dropFirst("#EXTINF:".count).split(separator: ",")[0]) }
    }

    @Test(
        "two video rungs and an audio rendition: clean rules, ffmpeg's durations, decodable playlists and MPD, I-frames that are IDRs"
    )
    func ladder() async throws {
        try await withTemporaryDirectory("ladder-package") { directory in
            let root = directory.path
            let keyframes = ["-force_key_frames", "expr:gte(t,n_forced*2)", "-sc_threshold", "0"]
            var video: [LadderPackage.Rendition] = []
            for (name, size) in [("360p", "640x360"), ("180p", "320x180")] {
                let segments = try await Self.rendition(
                    root,
                    name,
                    Self.source + ["-s", size, "-c:v", "libx264", "-profile:v", "high", "-bf", "2"] + keyframes
                )
                video.append(LadderPackage.Rendition(name: name, segments: segments, frameRate: 25))
            }
            let audioSegments = try await Self.rendition(
                root,
                "audio",
                ["-f", "lavfi", "-i", "sine=f=440:r=48000:d=13", "-ac", "2", "-c:a", "aac", "-b:a", "128k"]
            )
            let package = try LadderPackage.package(
                root: root,
                video: video,
                audio: LadderPackage.Rendition(name: "audio", segments: audioSegments)
            )
            #expect(package.findings.isEmpty, "\(package.findings)")
            for (path, text) in package.files {
                try text.write(
                    toFile: (root as NSString).appendingPathComponent(path),
                    atomically: true,
                    encoding: .utf8
                )
            }

            // Our EXTINFs are ffmpeg's, within a millisecond; the target is the same everywhere.
            for name in ["360p", "180p", "audio"] {
                let ours = try Self.extinfs("\(root)/\(name).m3u8")
                let theirs = try Self.extinfs("\(root)/\(name).ffmpeg.m3u8")
                #expect(
                    ours.count == theirs.count && zip(ours, theirs).allSatisfy { abs($0 - $1) < 0.001 },
                    "\(name): \(ours) against \(theirs)"
                )
            }
            // BANDWIDTH at least the peak by ffmpeg's durations and the files' sizes, video plus audio.
            func peak(_ name: String, _ segments: [String]) throws -> Double {
                let durations = try Self.extinfs("\(root)/\(name).ffmpeg.m3u8")
                return try zip(segments, durations).map { file, duration in
                    let bytes =
                        try FileManager.default.attributesOfItem(atPath: "\(root)/\(file)")[.size] as! NSNumber
                    return bytes.doubleValue * 8 / duration
                }.max() ?? 0
            }
            let master = try #require(package.files["master.m3u8"])
            let audioPeak = try peak("audio", audioSegments)
            for rendition in video {
                let line = try #require(
                    master.split(separator: "\n").first {
                        $0.contains("RESOLUTION=\(rendition.name == "360p" ? "640x360" : "320x180")")
                            && $0.hasPrefix("#EXT-X-STREAM-INF")
                    }
                )
                let declared = try #require(
                    Double(line.split(separator: ",")[0].dropFirst("#EXT-X-STREAM-INF:BANDWIDTH=".count))
                )
                let measured = try peak(rendition.name, rendition.segments) + audioPeak
                #expect(
                    declared >= measured - 1 && declared <= measured * 1.10,
                    "\(rendition.name): \(declared) against \(measured)"
                )
                #expect(line.contains(#"CODECS="avc1.64"#) && line.contains("mp4a.40.2"), "\(line)")
            }

            // ffmpeg decodes through the master playlist, each media playlist and the MPD.
            for entry in ["master.m3u8", "360p.m3u8", "180p.m3u8", "audio.m3u8", "manifest.mpd"] {
                let decoded = try await ProcessRunner.run(
                    "ffmpeg",
                    [
                        "-v", "error", "-xerror", "-allowed_extensions", "ALL", "-i", "\(root)/\(entry)", "-f", "null",
                        "-",
                    ]
                )
                #expect(
                    decoded.status == 0 && decoded.stderr.isEmpty,
                    "\(entry): \(decoded.stderr) \(entry.hasSuffix(".mpd") ? package.files[entry] ?? "" : "")"
                )
            }

            // Each I-frame entry's bytes, after the init segment, are one keyframe.
            let iFrames = try String(contentsOfFile: "\(root)/360p-iframes.m3u8", encoding: .utf8).split(
                separator: "\n"
            )
            let ranges = iFrames.filter { $0.hasPrefix("#EXT-X-BYTERANGE:") }
            #expect(ranges.count == video[0].segments.count)
            for (index, range) in ranges.enumerated() {
                let parts = range.dropFirst("#EXT-X-BYTERANGE:".count).split(separator: "@").compactMap { Int($0) }
                var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(root)/360p-init.mp4"))
                let segment = try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(video[0].segments[index])"))
                bytes.append(segment.subdata(in: parts[1]..<(parts[1] + parts[0])))
                let piece = directory.file("iframe-\(index).mp4")
                try bytes.write(to: URL(fileURLWithPath: piece))
                let probed = try await ProcessRunner.check(
                    "ffprobe",
                    ["-v", "error", "-show_entries", "packet=flags", "-of", "csv=p=0", piece]
                )
                let packets = probed.stdoutText.split(separator: "\n")
                #expect(
                    packets.count == 1 && packets[0].hasPrefix("K"),
                    "segment \(index): \(probed.stdoutText)"
                )
            }
        }
    }
}
