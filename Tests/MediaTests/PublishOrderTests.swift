import Foundation
import Media
import MediaTestKit
import Testing

/// The order a set's files are shown in is data (issue 43): each file's `PublishRank`, not the
/// order its writer happened to write it in. The rename into place and the upload both follow
/// `staged`.
@Suite("Publish order")
struct PublishOrderTests {
    @Test("content, then indexes, then the entry point, whatever order they were written in")
    func ranksOrderTheSet() async throws {
        try await withTemporaryDirectory("publish-order") { directory in
            let files = try StagedFiles(directory: directory.path)
            try files.write("master.m3u8", Array("#EXTM3U\n".utf8), rank: .entryPoint)
            try files.write("720p.m3u8", Array("#EXTM3U\n".utf8), rank: .index)
            try files.write("720p-00001.m4s", [1, 2, 3])
            try files.write("manifest.mpd", Array("<MPD/>".utf8), rank: .entryPoint)
            try files.write("720p-00002.m4s", [4, 5])
            let order = ["720p-00001.m4s", "720p-00002.m4s", "720p.m3u8", "master.m3u8", "manifest.mpd"]
            #expect(files.staged.map(\.name) == order, "what an upload follows")
            #expect(try files.commit().map(\.name) == order, "what the renames follow")
        }
    }
}
