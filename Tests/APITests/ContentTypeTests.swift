import HTTPTypes
import JobctlCore
import Media
import Testing

@testable import DashboardHTTP

/// One table of what a file is (issue 43): an upload's `Content-Type` and the dashboard's file
/// responses read it, and it knows every kind of file jobctl writes.
@Suite("Content types")
struct ContentTypeTests {
    @Test("every file jobctl writes has its type; anything else is sent as bytes")
    func everyFileWeWriteIsKnown() {
        for format in ContainerFormat.allCases {
            let type = ContentType.of("talk.\(format.fileExtension)")
            #expect(type?.hasPrefix(format.holdsVideo ? "video/" : "audio/") == true, "\(format): \(type ?? "none")")
        }
        let written = [
            "master.m3u8", "720p/init.mp4", "720p/seg-00001.m4s", "manifest.mpd", "player.html", "thumb-001.jpg",
            "sheet.webp", "storyboard.vtt", "storyboard.json", "waveform.png", "peaks.json",
        ]
        for name in written { #expect(ContentType.of(name) != nil, "\(name)") }
        #expect(ContentType.of("SEG.M4S") == "video/iso.segment", "extensions in any case")
        #expect(ContentType.of("peaks.dat") == nil && ContentType.upload("peaks.dat") == "application/octet-stream")
    }

    @Test("the dashboard serves media inline from the table, and a page of ours only as a download")
    func dashboardFiles() {
        let video = DashboardRoutes.fileHeaders("talk.mp4")
        #expect(video[.contentType] == "video/mp4" && video[.contentDisposition] == "inline")
        let page = DashboardRoutes.fileHeaders("player.html")
        #expect(page[.contentType] == "application/octet-stream" && page[.contentDisposition] == "attachment")
        #expect(DashboardRoutes.fileHeaders("storyboard.vtt")[.contentType] == ContentType.of("storyboard.vtt"))
    }
}
