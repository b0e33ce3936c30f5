import Foundation
import JobctlCore
import Media
import MediaTestKit
import Testing

/// Every error code of docs/spec.md §4 that an export can produce, each from a real bad input; never a
/// crash, never a file left at the destination (nor a temporary one beside it).
///
/// A `MediaError`'s code is an `ErrorCode`, so that it is one of the vocabulary's is the
/// compiler's to check (QueueTests' `JobErrorTests` holds the vocabulary to docs/spec.md).
@Suite("Bad input: clear errors, nothing left behind", .timeLimit(.minutes(5)))
struct ErrorTests {
    @Test(
        "MediaError has the one error shape: code and message for people, FFmpeg's words as the cause, where it was made"
    )
    func shape() {
        let line = #line + 1
        let error = MediaError(
            .decodeFailed,
            "the video track of in.mov cannot be decoded",
            detail: "Invalid data found when processing input"
        )
        #expect(error.description == "decode_failed: the video track of in.mov cannot be decoded")
        #expect(error.code == .decodeFailed && error.code.rawValue == "decode_failed")
        #expect(error.detail == "Invalid data found when processing input")
        #expect(error.location.line == line)
        #expect(error.debugDescription.contains("caused by"), "\(error.debugDescription)")
    }

    enum Input: Sendable {
        case fixture(Fixture)
        case path(String)
    }

    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var input: Input
        var preset = "low"
        var range: String?
        var outputName = "out.mp4"
        var format: ContainerFormat?
        var code: ErrorCode
        var mentions: String
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "missing file",
            input: .path("/nonexistent/talk.mov"),
            code: .inputNotFound,
            mentions: "does not exist"
        ),
        Case(name: "a directory", input: .path("/tmp"), code: .inputUnreadable, mentions: "is a directory"),
        Case(name: "a text file", input: .fixture(.notMedia), code: .inputUnreadable, mentions: "not a media file"),
        Case(name: "an empty file", input: .fixture(.empty), code: .inputUnreadable, mentions: "is empty"),
        Case(
            name: "mp4 cut before its index",
            input: .fixture(.truncatedMoovAtEnd),
            code: .inputUnreadable,
            mentions: "moov atom not found"
        ),
        Case(
            name: "subtitles only",
            input: .fixture(.subtitleOnly),
            code: .inputUnsupported,
            mentions: "no audio or video track"
        ),
        Case(
            name: "an HLS playlist of local files",
            input: .fixture(.playlist),
            code: .inputUnsupported,
            mentions: "(hls)"
        ),
        Case(
            name: "mp4 whose media data stops halfway",
            input: .fixture(.truncatedFaststart),
            code: .decodeFailed,
            mentions: "truncated or damaged"
        ),
        Case(
            name: "the same, in a range past the cut",
            input: .fixture(.truncatedFaststart),
            range: "1s+2s",
            code: .decodeFailed,
            mentions: "truncated"
        ),
        Case(
            name: "a range after the end",
            input: .fixture(.basic),
            range: "10s+1s",
            code: .rangeOutOfBounds,
            mentions: "lasts 4"
        ),
        Case(
            name: "m4a of a video without sound",
            input: .fixture(.videoOnly),
            preset: "m4a",
            outputName: "out.m4a",
            code: .presetIncompatible,
            mentions: "no audio track"
        ),
        Case(
            name: "ProRes + PCM copied into mp4",
            input: .fixture(.prores),
            preset: "passthrough",
            code: .presetIncompatible,
            mentions: "cannot be copied into mp4"
        ),
        Case(
            name: "an output directory that does not exist",
            input: .fixture(.basic),
            outputName: "missing/dir/out.mp4",
            code: .outputUnwritable,
            mentions: "does not exist"
        ),
        Case(
            name: "an output path that is a directory",
            input: .fixture(.basic),
            outputName: ".",
            code: .outputForbidden,
            mentions: "is a directory"
        ),
        Case(
            name: "media data replaced by noise",
            input: .fixture(.garbage),
            code: .decodeFailed,
            mentions: "too damaged"
        ),
        Case(
            name: "a picture too small for HEVC",
            input: .fixture(.tiny),
            preset: "hevc-highest",
            code: .encodeFailed,
            mentions: "too small"
        ),
        // Outputs with no media are failures, not exports (they once "completed" with 262 bytes
        // of headers and 0 frames).
        Case(
            name: "an MP4 with Common Encryption",
            input: .fixture(.encryptedMP4),
            code: .inputUnsupported,
            mentions: "is encrypted (DRM)"
        ),
        Case(
            name: "the same, copied",
            input: .fixture(.encryptedMP4),
            preset: "passthrough",
            code: .inputUnsupported,
            mentions: "is encrypted (DRM)"
        ),
        Case(
            name: "a WebM with an encrypted frame",
            input: .fixture(.encryptedWebM),
            code: .inputUnsupported,
            mentions: "is encrypted (DRM)"
        ),
        Case(
            name: "a WAV of 20 samples",
            input: .fixture(.tinyWAV),
            preset: "m4a",
            outputName: "out.m4a",
            code: .decodeFailed,
            mentions: "could be exported"
        ),
    ]

    /// Images and waveforms of encrypted media say so too (not "no frame could be decoded").
    @Test(arguments: [Fixture.encryptedMP4, .encryptedWebM])
    func encryptedMediaIsNamedAsSuch(fixture: Fixture) async throws {
        let path = try await Fixtures.shared.path(fixture)
        #expect(try Asset(location: path).tracks.contains { $0.isEncrypted == true } == (fixture == .encryptedWebM))
        // Refused before any image (a key id in the header), or each image fails so (packets).
        var failure: MediaError?
        do {
            try ImageGenerator(asset: try Asset(location: path)).generateImages(at: [500_000]) { image in
                failure = image.error
            }
        } catch {
            failure = error
        }
        #expect(
            failure?.code == .inputUnsupported && failure?.message.contains("encrypted") == true,
            "\(String(describing: failure))"
        )
        if fixture == .encryptedMP4 {
            #expect {
                try WaveformReader(asset: try Asset(location: path), options: WaveformOptions(), timeRange: .all)
                    .readPeaks()
            } throws: { error in
                (error as? MediaError)?.code == .inputUnsupported && "\(error)".contains("encrypted")
            }
        }
    }

    @Test(arguments: cases)
    func failsWithItsCode(_ test: Case) async throws {
        let input: String =
            switch test.input {
            case .fixture(let fixture): try await Fixtures.shared.path(fixture)
            case .path(let path): path
            }
        try await withTemporaryDirectory("error") { directory in
            let output = directory.file(test.outputName)
            do {
                let result = try await ExportChecks.export(
                    input,
                    preset: test.preset,
                    range: test.range,
                    to: output,
                    format: test.format
                )
                Issue.record("\(test): expected \(test.code), exported \(result)")
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

    @Test func unknownPresetIsAnErrorBeforeAnythingIsRead() {
        #expect { try PresetCatalog.builtIn.preset(named: "ultra") } throws: {
            ($0 as? MediaError)?.code == .presetUnknown
        }
    }

    /// A transport stream with a sixth of its bytes overwritten: FFmpeg's error concealment
    /// gets through it, the export completes, and the output itself decodes cleanly.
    @Test func damagedStreamIsDecodedWithConcealment() async throws {
        let input = try await Fixtures.shared.path(.corrupted)
        try await withTemporaryDirectory("damaged") { directory in
            let output = directory.file("out.mp4")
            let result = try await ExportChecks.export(input, preset: "low", range: nil, to: output)
            #expect(result.duration > 5)
            #expect(try await FFProbe.decodeErrors(output) == "")
        }
    }

    /// A range that ends before the damage is exported normally.
    @Test func truncatedFileBeforeTheCutExports() async throws {
        let input = try await Fixtures.shared.path(.truncatedFaststart)
        try await withTemporaryDirectory("truncated") { directory in
            let output = directory.file("out.mp4")
            let result = try await ExportChecks.export(input, preset: "low", range: "0.5s+1s", to: output)
            #expect(abs(result.duration - 1) < 0.05)
            #expect(try await FFProbe.decodeErrors(output) == "")
        }
    }

    /// An existing file at the destination is replaced only when the new one is complete.
    @Test func failedExportKeepsTheExistingDestination() async throws {
        let input = try await Fixtures.shared.path(.garbage)
        try await withTemporaryDirectory("keep") { directory in
            let output = directory.file("out.mp4")
            try Data("previous".utf8).write(to: URL(fileURLWithPath: output))
            await #expect(throws: MediaError.self) {
                try await ExportChecks.export(input, preset: "low", range: nil, to: output)
            }
            #expect(try String(contentsOfFile: output, encoding: .utf8) == "previous")
            #expect(directory.contents() == ["out.mp4"])
        }
    }
}
