import Foundation
import MediaTestKit
import Testing

@testable import Media

/// The rename that makes an output visible replaces only a regular file, even if something
/// else appeared at the destination while the export ran.
@Suite("Commit only over regular files", .timeLimit(.minutes(2)))
struct DestinationTests {
    /// A `low` export session of `input` over `range`.
    static func session(
        _ input: String,
        to output: String,
        range: String = "0+1s",
        tag: String? = nil
    ) throws -> ExportSession {
        ExportSession(
            asset: try Asset(location: input),
            preset: try PresetCatalog.builtIn.preset(named: "low"),
            outputPath: output,
            timeRange: try TimeRange(parsing: range),
            temporaryTag: tag
        )
    }

    /// A one-second export of `input`, complete but not yet renamed to `output`.
    static func finishedExport(of input: String, to output: String) async throws -> PendingOutput {
        try await session(input, to: output).exportDeferringCommit().takeOutput()
    }

    @Test func aFIFOThatAppearsDuringTheExportIsNotReplaced() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("commit-fifo") { directory in
            let output = directory.file("out.mp4")
            let pending = try await Self.finishedExport(of: input, to: output)
            #expect(mkfifo(output, 0o644) == 0)
            do {
                try pending.commit()
                Issue.record("committed over a FIFO")
            } catch let error as MediaError {
                #expect(error.code == .outputForbidden, "\(error)")
            }
            var info = stat()
            #expect(lstat(output, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
            #expect(directory.contents() == ["out.mp4"], "the finished file is removed: \(directory.contents())")
        }
    }

    @Test(
        "a finished output dropped without commit or discard is deleted; a discarded one too; nothing reaches the destination"
    )
    func droppedOutputIsDeleted() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("pending-drop") { directory in
            do {
                let pending = try await Self.finishedExport(of: input, to: directory.file("dropped.mp4"))
                #expect(FileManager.default.fileExists(atPath: pending.temporaryPath))
                _ = consume pending
            }
            #expect(directory.contents() == [], "a dropped output leaves nothing: \(directory.contents())")
            let discarded = try await Self.finishedExport(of: input, to: directory.file("discarded.mp4"))
            discarded.discard()
            #expect(directory.contents() == [], "a discarded output leaves nothing: \(directory.contents())")
            let committed = try await Self.finishedExport(of: input, to: directory.file("kept.mp4"))
            try committed.commit()
            #expect(
                directory.contents() == ["kept.mp4"],
                "a committed output stays after the value is gone: \(directory.contents())"
            )
        }
    }

    @Test func theCommitErrorIsOutputForbidden() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("commit-dir") { directory in
            let output = directory.file("out.mp4")
            let pending = try await Self.finishedExport(of: input, to: output)
            #expect(mkdir(output, 0o755) == 0)
            do {
                try pending.commit()
                Issue.record("committed over a directory")
            } catch let error as MediaError {
                #expect(error.code == .outputForbidden && error.message.contains("is a directory"), "\(error)")
            }
        }
    }

    /// The temporary name swapped for a link while the export writes (someone with write access
    /// to the directory): FFmpeg keeps writing the file jobctl created, the victim is untouched,
    /// and nothing is renamed into place.
    @Test func aTemporaryFileSwappedForALinkMidExportIsNotWrittenThrough() async throws {
        let input = try await Fixtures.shared.path(.long)
        try await withTemporaryDirectory("tmp-swap") { directory in
            let output = directory.file("out.mp4")
            let victim = directory.file("victim.txt")
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: victim))
            let session = try Self.session(input, to: output, range: "0+8s", tag: "swap")
            let temporary = AssetWriter.temporaryPath(for: output, tag: "swap")
            let export = Task { try await session.export() }
            #expect(await eventually(within: .seconds(60)) { FileManager.default.fileExists(atPath: temporary) })
            #expect(rename(temporary, directory.file("moved-away")) == 0 && symlink(victim, temporary) == 0)
            do {
                _ = try await export.value
                Issue.record("the swapped file was renamed into place")
            } catch let error as MediaError {
                #expect(error.code == .outputForbidden && error.message.contains("was replaced"), "\(error)")
            }
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me", "FFmpeg wrote through the link")
            #expect(!FileManager.default.fileExists(atPath: output))
            #expect(
                try await FFProbe.probe(directory.file("moved-away")).video?.codec_name == "h264",
                "the real file was written whole"
            )
        }
    }

    /// A symbolic link planted at the temporary file's name is removed, never written through.
    @Test func aLinkAtTheTemporaryNameIsNotFollowed() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("tmp-link") { directory in
            let output = directory.file("out.mp4")
            let victim = directory.file("victim.txt")
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: victim))
            let temporary = AssetWriter.temporaryPath(for: output, tag: "planted")
            #expect(symlink(victim, temporary) == 0)
            let session = try Self.session(input, to: output, tag: "planted")
            _ = try await session.export()
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "keep me")
            #expect(try await FFProbe.probe(output).video?.codec_name == "h264")
        }
    }
}
