import Foundation
import Media
import MediaTestKit
import Synchronization
import Testing

@Suite("Export session: progress, statuses, cancellation", .timeLimit(.minutes(5)))
struct SessionTests {
    private func session(
        _ fixture: Fixture,
        preset: String,
        output: String,
        range: String? = nil
    ) async throws -> ExportSession {
        let asset = try Asset(location: try await Fixtures.shared.path(fixture))
        let timeRange = try range.map { try TimeRange(parsing: $0) } ?? .all
        return ExportSession(
            asset: asset,
            preset: try PresetCatalog.builtIn.preset(named: preset),
            outputPath: output,
            timeRange: timeRange
        )
    }

    /// Runs the export synchronously on its own thread and notes when it returns, so the
    /// measurement is the pipeline's, not the (shared, busy) test scheduler's.
    private final class BackgroundExport: Sendable {
        let outcome = Mutex<(result: Result<ExportResult, MediaError>, at: ContinuousClock.Instant)?>(nil)

        init(_ session: ExportSession) {
            Thread.detachNewThread { [self] in
                let result = Result { () throws(MediaError) -> ExportResult in try session.export() }
                outcome.withLock { $0 = (result, .now) }
            }
        }
    }

    @Test func cancelFromAnotherThreadStopsWithinTwoSecondsAndLeavesNothing() async throws {
        try await withTemporaryDirectory("cancel") { directory in
            let session = try await session(.long, preset: "highest", output: directory.file("out.mp4"))
            let export = BackgroundExport(session)
            #expect(await eventually(within: .seconds(30)) { session.progress > 0.05 }, "the export never got going")
            #expect(session.status == .reading)
            #expect(
                directory.contents().contains { $0.hasSuffix(".jobctl.tmp") },
                "the temporary file is written beside the destination"
            )

            let cancelledAt = ContinuousClock.now
            session.cancel()
            #expect(await eventually(within: .seconds(30)) { export.outcome.withLock { $0 != nil } })
            let (result, finishedAt) = try #require(export.outcome.withLock { $0 })
            #expect(finishedAt - cancelledAt < .seconds(2), "cancellation took \(finishedAt - cancelledAt)")
            #expect(throws: MediaError.self) { try result.get() }
            if case .failure(let error) = result { #expect(error.isCancellation) }
            #expect(session.status == .cancelled)
            #expect(directory.contents().isEmpty, "left \(directory.contents())")
        }
    }

    @Test func cancellingTheTaskCancelsTheExport() async throws {
        try await withTemporaryDirectory("task-cancel") { directory in
            let session = try await session(.long, preset: "highest", output: directory.file("out.mp4"))
            let export = Task { try await session.export() }
            #expect(await eventually(within: .seconds(30)) { session.progress > 0.02 })
            export.cancel()
            let outcome = await export.result
            #expect(throws: MediaError.self) { try outcome.get() }
            #expect(session.status == .cancelled)
            #expect(directory.contents().isEmpty)
        }
    }

    @Test func cancelBeforeStartWritesNothing() async throws {
        try await withTemporaryDirectory("early-cancel") { directory in
            let session = try await session(.basic, preset: "low", output: directory.file("out.mp4"))
            session.cancel()
            #expect { try session.export() } throws: { ($0 as? MediaError)?.isCancellation == true }
            #expect(directory.contents().isEmpty)
        }
    }

    @Test func progressRisesToOneAndEveryTrackCompletes() async throws {
        try await withTemporaryDirectory("progress") { directory in
            let session = try await session(.long, preset: "low", output: directory.file("out.mp4"), range: "2s+8s")
            #expect(session.status == .unknown && session.progress == 0)
            // Sampled from a thread of its own: the test scheduler may be busy.
            let samples = Mutex<[Double]>([])
            Thread.detachNewThread {
                while !session.status.isTerminal {
                    let progress = session.progress
                    samples.withLock { $0.append(progress) }
                    usleep(5_000)
                }
            }
            let export = Task { try await session.export() }
            let result = try await export.value
            let seen = samples.withLock { $0 }
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 }, "progress went down: \(seen)")
            #expect(seen.contains { $0 > 0 && $0 < 1 }, "no intermediate progress in \(seen.count) samples")
            #expect(session.progress == 1 && session.status == .completed)
            let tracks = session.tracks
            #expect(tracks.map(\.mediaType) == [.video, .audio])
            #expect(tracks.allSatisfy { $0.status == .completed })
            #expect(tracks[0].written == 200 && tracks[0].read == 200, "\(tracks[0])")  // 8 s at 25 fps
            #expect(tracks[1].written == 8 * 44100 && tracks[1].read == tracks[1].written, "\(tracks[1])")
            #expect(result.tracks[0].frames == 200 && result.tracks[1].samples == 8 * 44100)
        }
    }

    /// Several exports in one process at once (a worker with concurrency > 1): FFmpeg contexts
    /// are per export, nothing global is shared.
    @Test func concurrentExportsInOneProcess() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("concurrent") { directory in
            try await withThrowingTaskGroup(of: ExportResult.self) { group in
                for (index, preset) in ["low", "medium", "m4a", "passthrough"].enumerated() {
                    let output = directory.file("out-\(index).\(preset == "m4a" ? "m4a" : "mp4")")
                    group.addTask { try await ExportChecks.export(input, preset: preset, range: "0.5s+3s", to: output) }
                }
                for try await result in group {
                    #expect(try await FFProbe.decodeErrors(result.output) == "")
                    #expect(result.duration >= 3 - 0.05)
                }
            }
        }
    }
}

@Suite("Assets (probe)")
struct AssetTests {
    @Test(arguments: Fixture.realWorld)
    func propertiesAgreeWithFFprobe(fixture: Fixture) async throws {
        let path = try await Fixtures.shared.path(fixture)
        let asset = try Asset(location: path)
        let probe = try await FFProbe.probe(path)
        #expect(probe.format.format_name == asset.container)
        #expect(abs((asset.durationSeconds ?? 0) - (probe.format.durationSeconds ?? -1)) < 0.001)
        #expect(abs(Double(asset.startTime) / 1e6 - probe.format.startSeconds) < 0.001)
        #expect(asset.tracks.count == probe.streams.count)
        for (track, stream) in zip(asset.tracks, probe.streams) {
            #expect(track.index == stream.index)
            #expect(track.mediaType.rawValue == stream.codec_type)
            #expect(track.codec == stream.codec_name)
            if track.mediaType == .video {
                #expect(track.width == stream.width && track.height == stream.height)
                #expect(track.pixelFormat == stream.pix_fmt)
                #expect(track.rotation == stream.rotation)
                if let aspect = stream.displayAspect, let width = track.displayWidth, let height = track.displayHeight {
                    #expect(
                        abs(Double(width) / Double(height) - aspect) < 0.01,
                        "\(fixture): display \(width)x\(height), aspect \(aspect)"
                    )
                }
            }
            if track.mediaType == .audio {
                #expect(track.sampleRate == stream.sampleRate && track.channels == stream.channels)
                #expect(track.channelLayout == stream.channel_layout)
            }
        }
    }

    @Test func realWorldShapesAreRecognised() async throws {
        let rotated = try Asset(location: try await Fixtures.shared.path(.rotated))
        #expect(rotated.primaryVideoTrack?.rotation == 90)
        #expect(rotated.primaryVideoTrack?.displayWidth == 240 && rotated.primaryVideoTrack?.displayHeight == 320)
        let anamorphic = try Asset(location: try await Fixtures.shared.path(.anamorphic))
        #expect(
            anamorphic.primaryVideoTrack?.sampleAspectRatio == "4:3"
                && anamorphic.primaryVideoTrack?.displayWidth == 640
        )
        let transport = try Asset(location: try await Fixtures.shared.path(.transportStream))
        #expect(transport.startTime > 3_600_000_000)
        let multi = try Asset(location: try await Fixtures.shared.path(.multiAudio))
        #expect(multi.audioTracks.map(\.language) == ["eng", "fra"])
        let audioOnly = try Asset(location: try await Fixtures.shared.path(.audioOnly))
        #expect(audioOnly.primaryVideoTrack == nil && audioOnly.audioTracks.first?.codec == "flac")
    }

    @Test func fileURLsAreLocalPaths() async throws {
        let path = try await Fixtures.shared.path(.basic)
        let asset = try Asset(location: "file://" + path)
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
        #expect(asset.tracks.count == 2 && asset.fileSize == size)
        #expect { try Asset(location: "file:///nonexistent/in.mov") } throws: {
            ($0 as? MediaError)?.code == .inputNotFound
        }
        #expect { try Asset(location: "ftp://example.com/in.mov") } throws: {
            ($0 as? MediaError)?.code == .inputUnsupported
        }
        #expect { try Asset(location: "concat:\(path)|\(path)") } throws: {
            ($0 as? MediaError)?.code == .inputNotFound
        }
    }

    @Test func compatiblePresets() async throws {
        let videoOnly = try Asset(location: try await Fixtures.shared.path(.videoOnly))
        #expect(
            try PresetCatalog.builtIn.preset(named: "m4a").incompatibility(with: videoOnly)?.code == .presetIncompatible
        )
        #expect(try PresetCatalog.builtIn.preset(named: "low").incompatibility(with: videoOnly) == nil)
        let prores = try Asset(location: try await Fixtures.shared.path(.prores))
        #expect(
            try PresetCatalog.builtIn.preset(named: "passthrough").incompatibility(with: prores)?.code
                == .presetIncompatible
        )
        #expect(
            try PresetCatalog.builtIn.preset(named: "passthrough").incompatibility(with: prores, format: .mov) == nil
        )
    }
}
