import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import JobAPI
import MediaTestKit
import Queue
import Testing

/// Thumbnails, storyboard and waveform jobs and inline presets over HTTP: the same recipe and
/// checks as `jobctl submit` (the Submission module), on real media under the input root.
@Suite("HTTP API: job kinds and inline presets")
struct APIKindsTests {
    typealias F = APIRouteTests.Fixture

    /// Posts `body` (JSON text) with the submit key.
    static func post(_ client: some TestClientProtocol, _ f: F, _ body: String) async throws -> TestResponse {
        try await client.execute(
            uri: "/v1/jobs",
            method: .post,
            headers: APIRouteTests.headers(f.submit),
            body: ByteBuffer(string: body)
        )
    }

    /// A fixture copied into the submit key's directory under the input root; its name there
    /// (what a client sends: paths are relative to the key's directory).
    static func local(_ fixture: Fixture, _ f: F) async throws -> String {
        let source: String = try await Fixtures.shared.path(fixture)
        let name = "\(fixture)." + (source as NSString).pathExtension
        let directory = f.directory.file(f.submitID)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent(name)
        if !FileManager.default.fileExists(atPath: path) {
            try FileManager.default.copyItem(atPath: source, toPath: path)
        }
        return name
    }

    @Test("thumbnails, storyboard, waveform and hls jobs store the CLI's options; wrong fields name themselves")
    func fileSetKinds() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let input = try await Self.local(.basic, f)
        try await f.app.test(.router) { client in
            let thumbnails = try await Self.post(
                client,
                f,
                #"{"kind":"thumbnails","input":"\#(input)","output":"thumbs","format":"png","thumbnails":{"at":["1s","50%","end"],"size":"160x","exact":true}}"#
            )
            #expect(thumbnails.status == .created, "\(String(buffer: thumbnails.body))")
            let job = APIRouteTests.json(thumbnails)
            #expect(job["kind"] as? String == "thumbnails" && job["preset"] as? String == "thumbnails")
            let settings = job["presetSettings"] as? [String: Any] ?? [:]
            #expect((settings["times"] as? [Any])?.count == 3, "\(settings)")
            #expect(settings["format"] as? String == "png")
            #expect(settings["toleranceBefore"] as? Int == 0)

            let storyboard = try await Self.post(
                client,
                f,
                #"{"kind":"storyboard","input":"\#(input)","output":"https://bucket.example.com/sb/{name}?sig=1","storyboard":{"tiles":12,"tileSize":"96x","columns":4}}"#
            )
            #expect(storyboard.status == .created, "\(String(buffer: storyboard.body))")
            #expect((APIRouteTests.json(storyboard)["presetSettings"] as? [String: Any])?["tiles"] as? Int == 12)

            let waveform = try await Self.post(
                client,
                f,
                ##"{"kind":"waveform","input":"\##(input)","output":"wave","waveform":{"pixelsPerSecond":20,"files":"json,png","color":"#ff0000"}}"##
            )
            #expect(waveform.status == .created, "\(String(buffer: waveform.body))")
            let wave = APIRouteTests.json(waveform)["presetSettings"] as? [String: Any] ?? [:]
            #expect(
                wave["pixelsPerSecond"] as? Int == 20
                    && (wave["png"] as? [String: Any])?["color"] as? String == "ff0000"
            )

            let local = try await Self.post(
                client,
                f,
                #"{"kind":"hls","input":"\#(input)","output":"talk-hls","hls":{"ladder":"720p, 360p","codec":"hevc"}}"#
            )
            #expect(local.status == .created, "\(String(buffer: local.body))")
            let stored = APIRouteTests.json(local)["presetSettings"] as? [String: Any] ?? [:]
            #expect(stored["ladder"] as? String == "720p, 360p" && stored["codec"] as? String == "hevc", "\(stored)")

            // Each refusal names its field.
            let refused: [(String, String)] = [
                (#"{"kind":"hls","input":"\#(input)","output":"h1","hls":{"ladder":"4k"}}"#, "hls.ladder"),
                (#"{"kind":"hls","input":"\#(input)","output":"h2","hls":{"codec":"vp9"}}"#, "hls.codec"),
                (#"{"kind":"hls","input":"\#(input)","output":"h3","format":"mp4"}"#, "format"),
                (#"{"kind":"hls","input":"\#(input)","output":"h4","split":"10m"}"#, "split"),
                (
                    #"{"kind":"thumbnails","input":"\#(input)","output":"t2","preset":"low"}"#,
                    "preset"
                ),
                (
                    #"{"kind":"export","input":"\#(input)","output":"e.mp4","preset":"low","waveform":{}}"#,
                    "waveform"
                ),
                (
                    #"{"kind":"thumbnails","input":"\#(input)","output":"t3","thumbnails":{"at":"soon"}}"#,
                    "thumbnails.at"
                ),
                (
                    #"{"kind":"thumbnails","input":"\#(input)","output":"t4","thumbnails":{"count":0}}"#,
                    "thumbnails.count"
                ),
                (#"{"kind":"thumbnails","input":"\#(input)","output":"https://bucket.example.com/t.jpg"}"#, "output"),
                (
                    #"{"kind":"export","input":"\#(input)","output":"https://bucket.example.com/{name}.mp4","preset":"low"}"#,
                    "output"
                ),
                (
                    #"{"kind":"storyboard","input":"\#(input)","output":"s2","storyboard":{"tileSize":"big"}}"#,
                    "storyboard.tileSize"
                ),
                (
                    #"{"kind":"waveform","input":"\#(input)","output":"w2","waveform":{"bits":12}}"#,
                    "waveform.bits"
                ),
                (
                    #"{"kind":"waveform","input":"\#(input)","output":"w3","waveform":{"width":100}}"#,
                    "waveform.files"
                ),
                (
                    #"{"kind":"thumbnails","input":"\#(input)","output":"t5","format":"gif"}"#,
                    "format"
                ),
                (#"{"kind":"slideshow","input":"\#(input)","output":"x"}"#, "kind"),
            ]
            for (body, field) in refused {
                let response = try await Self.post(client, f, body)
                #expect(response.status == .unprocessableContent, "\(body)")
                #expect(APIRouteTests.errorCode(response).field == field, "\(body): \(String(buffer: response.body))")
            }
        }
    }

    @Test(
        "a local input is looked at as the CLI does: no video for thumbnails, no audio for a waveform, a preset it cannot take"
    )
    func localInputChecks() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        let audio = try await Self.local(.audioOnly, f)
        let video = try await Self.local(.videoOnly, f)
        try await f.app.test(.router) { client in
            let cases: [(String, String, String)] = [
                (
                    #"{"kind":"thumbnails","input":"\#(audio)","output":"a1"}"#, "input",
                    "input_unsupported"
                ),
                (
                    #"{"kind":"waveform","input":"\#(video)","output":"a2"}"#, "input",
                    "input_unsupported"
                ),
                (
                    #"{"input":"\#(video)","output":"a3.m4a","preset":"m4a"}"#, "preset",
                    "preset_incompatible"
                ),
                // The output names the input itself.
                (#"{"input":"\#(video)","output":"\#(video)","preset":"low"}"#, "output", "output_forbidden"),
            ]
            for (body, field, code) in cases {
                let response = try await Self.post(client, f, body)
                #expect(response.status == .unprocessableContent, "\(body)")
                #expect(APIRouteTests.errorCode(response) == (code, field), "\(String(buffer: response.body))")
            }
            // The same input with kinds it can take.
            let fine = try await Self.post(
                client,
                f,
                #"{"kind":"waveform","input":"\#(audio)","output":"a4"}"#
            )
            #expect(fine.status == .created)
        }
    }

    @Test("an inline preset is checked like a presets file's entry and stored with the job; a known name is refused")
    func inlinePresets() async throws {
        let f = try await F()
        defer { f.directory.remove() }
        try await f.app.test(.router) { client in
            let output = "inline.mp4"
            let created = try await Self.post(
                client,
                f,
                #"{"input":"https://media.example.com/a.mov","output":"\#(output)","preset":{"name":"tiny-h264","format":"mp4","video":{"codec":"h264","maxWidth":320,"maxHeight":240,"crf":30},"audio":{"codec":"aac","bitrate":64000,"channels":1}}}"#
            )
            #expect(created.status == .created, "\(String(buffer: created.body))")
            let job = APIRouteTests.json(created)
            #expect(job["preset"] as? String == "tiny-h264")
            let video = (job["presetSettings"] as? [String: Any])?["video"] as? [String: Any]
            #expect(video?["maxWidth"] as? Int == 320)

            let unnamed = try await Self.post(
                client,
                f,
                #"{"input":"https://media.example.com/a.mov","output":"b.m4a","preset":{"format":"m4a","audio":{"codec":"aac"}}}"#
            )
            #expect(unnamed.status == .created, "\(String(buffer: unnamed.body))")
            #expect(APIRouteTests.json(unnamed)["preset"] as? String == "inline")

            for preset in [
                #"{"format":"mp4","video":{"codec":"h265000"}}"#,
                #"{"format":"mp4","video":{"codec":"h264","crf":99}}"#,
                #"{"format":"mp4","video":{"codec":"h264"},"colour":"red"}"#, #"{"name":"low","format":"mp4"}"#,
                #"[1]"#,
            ] {
                let response = try await Self.post(
                    client,
                    f,
                    #"{"input":"https://media.example.com/a.mov","output":"c.mp4","preset":\#(preset)}"#
                )
                #expect(response.status == .unprocessableContent, "\(preset)")
                #expect(
                    APIRouteTests.errorCode(response).field == "preset",
                    "\(preset): \(String(buffer: response.body))"
                )
            }
        }
    }
}
