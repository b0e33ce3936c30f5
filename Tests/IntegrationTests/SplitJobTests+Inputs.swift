import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import QueueTestKit
import Testing

/// A damaged input (issue 42, item 9): the whole export conceals the damage and completes, so
/// the split export of the same input completes too, with the same frames.
extension SplitJobTests {
    struct DamagedInput: Sendable, CustomStringConvertible {
        var fixture: Fixture
        /// 40 runs of 16 bytes spread through the media by this seed…
        var seed: UInt64
        /// …or the slice header of the picture at this time (s): it decodes to nothing.
        var frameAt: Double? = nil
        var description: String { "\(fixture), " + (frameAt.map { "the picture at \($0) s" } ?? "seed \(seed)") }
    }

    static let damagedInputs = [
        DamagedInput(fixture: .splitCFR, seed: 1),
        DamagedInput(fixture: .splitCFR, seed: 7),  // a picture in the middle of segment 2 is lost
        DamagedInput(fixture: .splitVFR, seed: 3),
        // The first picture of a segment (4 s segments at 25 fps: 8 s starts segment 2).
        DamagedInput(fixture: .splitCFR, seed: 5, frameAt: 8),
    ]

    @Test("a damaged input splits as it exports whole", .serialized, arguments: damagedInputs)
    func aDamagedInputSplitsAsItExportsWhole(input damaged: DamagedInput) async throws {
        let setup = try await Setup("split-damaged-input")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = setup.directory.file("damaged.mp4")
        try FileManager.default.copyItem(atPath: try await Fixtures.shared.path(damaged.fixture), toPath: input)
        if let time = damaged.frameAt {
            try await Self.damage(input, pictureAt: time, seed: damaged.seed)
        } else {
            try Self.damage(input, runs: 40, seed: damaged.seed)
        }
        // The oracle: the one-process export of the damaged file completes (FFmpeg conceals).
        let whole = setup.directory.file("whole.mp4")
        let export = try await Jobctl.run(["export", input, "--preset", "low", "-o", whole])
        try #require(export.status == 0, "the whole export failed: \(export.stderr)")

        let output = setup.directory.file("split.mp4")
        let id = try await setup.submit(input, ["--split", "4s", "-o", output])
        let worker = try Self.worker(setup, "A", secret: secret)
        #expect(try await worker.waitForExit(timeout: .seconds(300))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.code.rawValue ?? "") \(job.error?.message ?? "")")
        // No futile encodes: a segment holding what the source decodes to is what it should hold.
        let segments = job.result?["segments"]?.arrayValue ?? []
        #expect(segments.allSatisfy { $0["reencoded"] == nil }, "\(segments)")
        // The frames the whole export shows, at the same times.
        let (wholeTimes, splitTimes) = (
            try await FFProbe.videoFrameTimes(whole), try await FFProbe.videoFrameTimes(output)
        )
        #expect(splitTimes.count == wholeTimes.count, "\(splitTimes.count) frames, whole \(wholeTimes.count)")
        #expect(zip(splitTimes, wholeTimes).allSatisfy { abs($0 - $1) < 1e-4 }, "frame times differ")
        #expect(try await FFProbe.audioSampleCount(output) == FFProbe.audioSampleCount(whole))
        #expect(try await FFProbe.decodeErrors(output) == "")

        // `jobctl export --split` in one process, the same.
        let local = setup.directory.file("local.mp4")
        let split = try await Jobctl.run(["export", input, "--preset", "low", "--split", "4s", "-o", local])
        #expect(split.status == 0, "\(split.stderr)")
        let localTimes = try await FFProbe.videoFrameTimes(local)
        #expect(localTimes.count == wholeTimes.count && zip(localTimes, wholeTimes).allSatisfy { abs($0 - $1) < 1e-4 })
    }

    /// Overwrites 16 bytes at the start of the picture at `time` (its slice header): the
    /// decoder drops it, the whole export shows the picture before it twice as long.
    static func damage(_ path: String, pictureAt time: Double, seed: UInt64) async throws {
        let packets = try await ProcessRunner.check(
            "ffprobe",
            ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,pos", "-of", "csv=p=0", path]
        )
        let position = try #require(
            packets.stdoutText.split(separator: "\n").compactMap { line -> Int? in
                let fields = line.split(separator: ",")
                guard fields.count == 2, let pts = Double(fields[0]), abs(pts - time) < 1e-6 else { return nil }
                return Int(fields[1])
            }.first,
            "no picture at \(time) s in \(path)"
        )
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        var generator = SplitMix64(seed: seed)
        try handle.seek(toOffset: UInt64(position + 4))
        try handle.write(contentsOf: Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }))
    }

    /// Overwrites `runs` runs of 16 bytes, spread by `seed` through the file's media data (its
    /// `mdat` box: the index stays whole, as in a file damaged in storage or transit).
    static func damage(_ path: String, runs: Int, seed: UInt64) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var media: Range<Int>?
        var offset = 0
        while offset + 8 <= bytes.count {
            var size = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            var header = 8
            if size == 1 {
                size = bytes[offset + 8..<offset + 16].reduce(0) { $0 << 8 | Int($1) }
                header = 16
            } else if size == 0 {
                size = bytes.count - offset
            }
            guard size >= header else { break }
            if String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self) == "mdat" {
                media = (offset + header)..<min(bytes.count, offset + size)
            }
            offset += size
        }
        let data = try #require(media, "\(path) has no mdat box")
        var generator = SplitMix64(seed: seed)
        for _ in 0..<runs {
            let start = Int.random(in: data.lowerBound..<(data.upperBound - 16), using: &generator)
            for index in start..<start + 16 { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}
