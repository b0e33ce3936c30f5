import Foundation
import MediaTestKit
import Streaming
import Testing

/// `FragmentedMP4` on CMAF files made by the `ffmpeg` CLI's HLS muxer, held to ffprobe: the
/// tracks' codecs, sizes and timescales, and every sample's size, sync flag and duration.
@Suite("Fragmented MP4 against ffprobe", .serialized)
struct FragmentedMP4Tests {
    /// A rendition made by ffmpeg: 7 s, a keyframe every 2 s, segments of about 6 s.
    static func make(
        _ directory: TemporaryDirectory,
        _ name: String,
        _ input: [String],
        _ codec: [String]
    ) async throws
        -> (initialization: String, segments: [String])
    {
        let folder = directory.file(name)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        _ = try await ProcessRunner.check(
            "ffmpeg",
            ["-v", "error", "-y"] + input + codec + [
                "-f", "hls", "-hls_time", "6", "-hls_segment_type", "fmp4", "-hls_playlist_type", "vod",
                "-hls_segment_filename", "\(folder)/seg-%05d.m4s", "\(folder)/index.m3u8",
            ]
        )
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".m4s") }
            .sorted()
            .map { "\(folder)/\($0)" }
        return ("\(folder)/init.mp4", segments)
    }

    /// ffprobe's packets of init + segment, concatenated as a player would read them.
    static func packets(
        _ initialization: String,
        _ segment: String,
        in directory: TemporaryDirectory
    ) async throws
        -> [(size: Int, key: Bool)]
    {
        let joined = directory.file("joined-\(UUID().uuidString).mp4")
        var data = try Data(contentsOf: URL(fileURLWithPath: initialization))
        data.append(try Data(contentsOf: URL(fileURLWithPath: segment)))
        try data.write(to: URL(fileURLWithPath: joined))
        let result = try await ProcessRunner.check(
            "ffprobe",
            ["-v", "error", "-show_entries", "packet=size,flags", "-of", "csv=p=0", joined]
        )
        return result.stdoutText.split(separator: "\n").map { line in
            let fields = line.split(separator: ",")
            return (Int(fields[0]) ?? -1, fields.count > 1 && fields[1].hasPrefix("K"))
        }
    }

    @Test("H.264 video: the track, its CODECS from avcC, and every sample as ffprobe sees it")
    func video() async throws {
        try await withTemporaryDirectory("fmp4-video") { directory in
            let (initialization, segments) = try await Self.make(
                directory,
                "video",
                ["-f", "lavfi", "-i", "testsrc2=s=320x180:r=30:d=7"],
                [
                    "-c:v", "libx264", "-profile:v", "high", "-level", "3.1", "-g", "60", "-keyint_min", "60",
                    "-sc_threshold", "0",
                ]
            )
            #expect(segments.count == 2, "\(segments)")
            let tracks = try FragmentedMP4.tracks(
                inInitialization: Array(try Data(contentsOf: URL(fileURLWithPath: initialization)))
            )
            let track = try #require(tracks.first)
            #expect(tracks.count == 1 && track.handler == "vide")
            #expect(track.codecs == "avc1.64001F", "High, level 3.1: \(track.codecs ?? "none")")
            #expect(track.width == 320 && track.height == 180)
            var decodeTime: UInt64 = 0
            for segment in segments {
                let fragments = try FragmentedMP4.fragments(
                    inSegment: Array(try Data(contentsOf: URL(fileURLWithPath: segment))),
                    tracks: tracks
                )
                let samples = fragments.flatMap(\.samples)
                #expect(fragments.first?.baseDecodeTime == decodeTime, "\(segment)")
                decodeTime += fragments.reduce(0) { $0 + $1.duration }
                let probed = try await Self.packets(initialization, segment, in: directory)
                #expect(samples.map { Int($0.size) } == probed.map(\.size), "\(segment): sizes")
                #expect(samples.map(\.isSync) == probed.map(\.key), "\(segment): sync flags")
                #expect(samples.first?.isSync == true, "\(segment) does not start with a keyframe")
                // The first sample's bytes are where the flags say: an IDR's NAL units (length-prefixed).
                let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: segment)))
                let first = try #require(samples.first)
                #expect(first.offset + Int(first.size) <= bytes.count)
            }
            #expect(Double(decodeTime) / Double(track.timescale) == 7, "the samples' durations add up to 7 s")
        }
    }

    @Test("AAC audio: mp4a.40.2 from esds, channels, sample rate, and every sample")
    func audio() async throws {
        try await withTemporaryDirectory("fmp4-audio") { directory in
            let (initialization, segments) = try await Self.make(
                directory,
                "audio",
                ["-f", "lavfi", "-i", "sine=f=440:r=48000:d=7", "-ac", "2"],
                ["-c:a", "aac", "-b:a", "128k"]
            )
            let tracks = try FragmentedMP4.tracks(
                inInitialization: Array(try Data(contentsOf: URL(fileURLWithPath: initialization)))
            )
            let track = try #require(tracks.first)
            #expect(track.handler == "soun" && track.codecs == "mp4a.40.2", "\(track)")
            #expect(track.channels == 2 && track.sampleRate == 48_000 && track.timescale == 48_000)
            for segment in segments {
                let samples = try FragmentedMP4.fragments(
                    inSegment: Array(try Data(contentsOf: URL(fileURLWithPath: segment))),
                    tracks: tracks
                ).flatMap(\.samples)
                let probed = try await Self.packets(initialization, segment, in: directory)
                #expect(samples.map { Int($0.size) } == probed.map(\.size), "\(segment): sizes")
                #expect(samples.allSatisfy { $0.isSync }, "\(samples.filter { !$0.isSync }.count) not sync")
                #expect(samples.dropLast().allSatisfy { $0.duration == 1024 }, "\(Set(samples.map(\.duration)))")
            }
        }
    }

    @Test("damaged files: a box that runs past its container, a fragment of an unknown track")
    func damaged() throws {
        #expect(throws: FragmentedMP4.Problem.self) {
            try FragmentedMP4.tracks(inInitialization: [0, 0, 0, 99, 0x6D, 0x6F, 0x6F, 0x76, 0, 0])
        }
        #expect(throws: FragmentedMP4.Problem.self) {
            try FragmentedMP4.tracks(inInitialization: [0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65])
        }
        // moof > traf > tfhd naming track 9.
        let tfhd: [UInt8] = [0, 0, 0, 16, 0x74, 0x66, 0x68, 0x64, 0, 0x02, 0, 0, 0, 0, 0, 9]
        let traf: [UInt8] = [0, 0, 0, 24, 0x74, 0x72, 0x61, 0x66] + tfhd
        let moof: [UInt8] = [0, 0, 0, 32, 0x6D, 0x6F, 0x6F, 0x66] + traf
        #expect(throws: FragmentedMP4.Problem.self) { try FragmentedMP4.fragments(inSegment: moof, tracks: []) }
    }

    @Test("a segment moved along the timeline: ffprobe sees every packet 10 s later, nothing else changed")
    func rebase() async throws {
        try await withTemporaryDirectory("fmp4-rebase") { directory in
            let made = try await Self.make(
                directory,
                "video",
                ["-f", "lavfi", "-i", "testsrc2=s=320x180:r=25:d=7"],
                ["-c:v", "libx264", "-force_key_frames", "expr:gte(t,n_forced*2)", "-sc_threshold", "0"]
            )
            let initialization = Array(try Data(contentsOf: URL(fileURLWithPath: made.initialization)))
            let track = try #require(try FragmentedMP4.tracks(inInitialization: initialization).first)
            let segment = Array(try Data(contentsOf: URL(fileURLWithPath: made.segments[1])))
            let moved = try FragmentedMP4.rebased(segment, by: Int64(track.timescale) * 10, timescale: track.timescale)
            #expect(moved.count == segment.count)
            let before = try FragmentedMP4.fragments(inSegment: segment, tracks: [track])
            let after = try FragmentedMP4.fragments(inSegment: moved, tracks: [track])
            #expect(after.map(\.baseDecodeTime) == before.map { $0.baseDecodeTime + UInt64(track.timescale) * 10 })
            #expect(after.map(\.samples) == before.map(\.samples))
            func times(_ bytes: [UInt8], _ name: String) async throws -> [Double] {
                let path = directory.file(name)
                try Data(initialization + bytes).write(to: URL(fileURLWithPath: path))
                let probed = try await ProcessRunner.check(
                    "ffprobe",
                    ["-v", "error", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path]
                )
                return probed.stdoutText.split(separator: "\n").compactMap { Double($0) }
            }
            let original = try await times(segment, "original.mp4")
            let shifted = try await times(moved, "shifted.mp4")
            #expect(
                !original.isEmpty && shifted.count == original.count
                    && zip(shifted, original).allSatisfy { abs($0 - $1 - 10) < 0.001 },
                "\(original.prefix(3)) → \(shifted.prefix(3))"
            )
            // Below 0 is refused rather than wrapped.
            #expect(throws: FragmentedMP4.Problem.self) {
                try FragmentedMP4.rebased(segment, by: -Int64(track.timescale) * 1000, timescale: track.timescale)
            }
        }
    }
}
