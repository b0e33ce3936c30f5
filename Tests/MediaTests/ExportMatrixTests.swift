import Foundation
import Media
import MediaTestKit
import Testing

/// Every real-world input × every kind of preset × whole file and a range, each output
/// checked with ffprobe and decoded with ffmpeg.
@Suite("Export matrix", .timeLimit(.minutes(10)))
struct ExportMatrixTests {
    static let presets = ["low", "medium", "highest", "1280x720", "hevc-1920x1080", "passthrough", "m4a"]
    static let ranges: [String?] = [nil, "1s+2s"]

    @Test(arguments: Fixture.realWorld, presets)
    func exportsAndChecks(fixture: Fixture, presetName: String) async throws {
        let source = try await Fixtures.shared.path(fixture)
        let preset = try PresetCatalog.builtIn.preset(named: presetName)
        try await withTemporaryDirectory("matrix-\(fixture)-\(presetName)") { directory in
            for range in Self.ranges {
                let format: ContainerFormat = preset.isPassthrough && fixture == .prores ? .mov : preset.format
                let output = directory.file("out-\(range ?? "all").\(format.fileExtension)")
                let timeRange = try range.map { try TimeRange(parsing: $0) }
                do {
                    let result = try await ExportChecks.export(
                        source,
                        preset: presetName,
                        range: range,
                        to: output,
                        format: format
                    )
                    #expect(FileManager.default.fileExists(atPath: output))
                    #expect(
                        result.bytes
                            == (try FileManager.default.attributesOfItem(atPath: output)[.size] as? NSNumber)?
                            .int64Value
                    )
                    if preset.isPassthrough {
                        try await ExportChecks.checkPassthrough(
                            source: source,
                            output: output,
                            range: timeRange,
                            result: result
                        )
                    } else {
                        try await ExportChecks.checkTranscode(
                            source: source,
                            output: output,
                            preset: preset,
                            range: timeRange,
                            result: result
                        )
                    }
                } catch let error as MediaError where error.code == .presetIncompatible {
                    // Only where it truly cannot apply: m4a without audio, or a copy the container refuses.
                    if preset.isPassthrough {
                        let ffmpegCan = try await ExportChecks.ffmpegCanCopy(source, into: format, directory: directory)
                        #expect(!ffmpegCan, "\(fixture) passthrough: \(error) but ffmpeg can copy it")
                    } else {
                        #expect(presetName == "m4a" && fixture == .videoOnly, "\(fixture) \(presetName): \(error)")
                    }
                    #expect(!FileManager.default.fileExists(atPath: output))
                }
                #expect(directory.contents().allSatisfy { !$0.hasSuffix(".tmp") }, "a temporary file was left behind")
            }
        }
    }
}
