import Foundation
import MediaTestKit
import Testing

@testable import Media

@Suite("Presets (docs/spec.md §3)")
struct PresetTests {
    @Test func builtInTableMatchesTheSpec() throws {
        let catalog = PresetCatalog.builtIn
        #expect(
            catalog.presets.map(\.name) == [
                "low", "medium", "highest", "640x480", "960x540", "1280x720", "1920x1080", "3840x2160",
                "hevc-1920x1080", "hevc-3840x2160", "hevc-highest", "passthrough", "m4a",
            ]
        )
        let low = try catalog.preset(named: "low")
        #expect(low.video == Preset.Video(codec: .h264, maxWidth: 426, maxHeight: 240, bitrate: 300_000))
        #expect(low.audio == Preset.Audio(codec: .aac, channels: 1, sampleRate: 44100, bitrate: 64000))
        let medium = try catalog.preset(named: "medium")
        #expect(medium.video?.maxWidth == 854 && medium.video?.maxHeight == 480 && medium.video?.bitrate == 1_200_000)
        #expect(medium.audio?.channels == 2 && medium.audio?.bitrate == 96000)
        let highest = try catalog.preset(named: "highest")
        #expect(highest.video?.box == nil && highest.video?.crf == 18 && highest.audio?.bitrate == 128_000)
        for name in ["640x480", "960x540", "1280x720", "1920x1080", "3840x2160"] {
            let preset = try catalog.preset(named: name)
            #expect("\(preset.video!.maxWidth!)x\(preset.video!.maxHeight!)" == name)
            #expect(
                preset.video?.codec == .h264
                    && preset.audio == Preset.Audio(codec: .aac, channels: 2, sampleRate: 44100, bitrate: 128_000)
            )
        }
        for name in ["hevc-1920x1080", "hevc-3840x2160", "hevc-highest"] {
            #expect(try catalog.preset(named: name).video?.codec == .hevc)
        }
        #expect(try catalog.preset(named: "passthrough").isPassthrough)
        let m4a = try catalog.preset(named: "m4a")
        #expect(m4a.video == nil && m4a.format == .m4a && m4a.audio?.channels == 2 && m4a.audio?.sampleRate == 44100)
        for preset in catalog.presets { #expect(preset.validationProblem == nil, "\(preset.name)") }
    }

    @Test func ffmpegCommandsSayWhatThePresetDoes() throws {
        let low = try PresetCatalog.builtIn.preset(named: "low").ffmpegCommand
        #expect(low.hasPrefix("ffmpeg -i INPUT "))
        #expect(low.hasSuffix(" OUTPUT"))
        for part in [
            "-c:v libx264", "-b:v 300k", "-x264-params sliced-threads=1", "-pix_fmt yuv420p", "-c:a aac", "-b:a 64k",
            "-ac 1", "-ar 44100",
            "-movflags +faststart", "-f mp4", "-map 0:v:0?", "-map 0:a?",
        ] {
            #expect(low.contains(part), "\(part) in \(low)")
        }
        // Slice threads for a target bit rate only (docs/ffmpeg.md #27): a CRF preset keeps frame threads.
        #expect(!(try PresetCatalog.builtIn.preset(named: "highest").ffmpegCommand.contains("sliced-threads")))
        let hevc = try PresetCatalog.builtIn.preset(named: "hevc-1920x1080").ffmpegCommand
        #expect(hevc.contains("-c:v libx265") && hevc.contains("-tag:v hvc1"))
        let copy = try PresetCatalog.builtIn.preset(named: "passthrough").ffmpegCommand
        #expect(copy.contains("-c:v copy") && copy.contains("-c:a copy") && !copy.contains("-vf"))
        let m4a = try PresetCatalog.builtIn.preset(named: "m4a").ffmpegCommand
        #expect(m4a.contains("-vn") && m4a.contains("-f ipod") && !m4a.contains("0:v"))
    }

    @Test func unknownPresetListsTheKnownOnes() {
        #expect {
            try PresetCatalog.builtIn.preset(named: "potato")
        } throws: { error in
            guard let error = error as? MediaError else { return false }
            return error.code == .presetUnknown && error.message.contains("potato")
                && error.message.contains("low, medium")
        }
    }

    @Test func customPresetsFileAddsPresets() throws {
        let json = """
            [{"name": "tiny", "summary": "for tests", "format": "mov",
              "video": {"codec": "h264", "maxWidth": 160, "maxHeight": 90, "crf": 30, "encoderPreset": "ultrafast"},
              "audio": {"codec": "aac", "channels": 1, "sampleRate": 22050, "bitrate": 32000},
              "ffmpeg": "ignored"}]
            """
        let catalog = try catalog(from: json)
        let tiny = try catalog.preset(named: "tiny")
        #expect(tiny.format == .mov && tiny.video?.maxWidth == 160 && tiny.audio?.sampleRate == 22050)
        #expect(catalog.presets.count == Preset.builtIn.count + 1)
    }

    @Test(
        arguments: [
            (
                "[{\"name\": \"low\", \"summary\": \"\", \"format\": \"mp4\", \"audio\": {\"codec\": \"aac\"}}]",
                "shadows a built-in"
            ),
            ("[{\"name\": \"x\", \"summary\": \"\", \"format\": \"mp4\"}]", "neither video nor audio"),
            (
                "[{\"name\": \"x\", \"summary\": \"\", \"format\": \"mp4\", \"video\": {\"codec\": \"h264\", \"maxWidth\": 100}}]",
                "go together"
            ),
            (
                "[{\"name\": \"x\", \"summary\": \"\", \"format\": \"mp4\", \"video\": {\"codec\": \"h264\", \"crf\": 99}}]",
                "crf"
            ),
            (
                "[{\"name\": \"x\", \"summary\": \"\", \"format\": \"mp4\", \"video\": {\"codec\": \"av1\"}}]",
                "video.codec is one of h264, hevc, copy, not \"av1\""
            ),
            (
                "[{\"name\": \"x\", \"summary\": \"\", \"format\": \"avi\", \"audio\": {\"codec\": \"aac\"}}]",
                "format is one of mp4, mov, m4a, not \"avi\""
            ),
            ("[{\"summary\": \"\"}]", "preset 1: name is missing"),
            ("{\"name\": \"x\"}", "not a JSON list"),
            (
                "[{\"name\": \"x\", \"summary\": \"\", \"format\": \"m4a\", \"video\": {\"codec\": \"h264\"}}]",
                "audio only"
            ),
            (
                "[{\"name\": \"x y\", \"summary\": \"\", \"format\": \"mp4\", \"audio\": {\"codec\": \"aac\"}}]",
                "names use"
            ),
        ] as [(String, String)]
    )
    func badPresetsFilesAreExplained(json: String, reason: String) {
        #expect {
            try catalog(from: json)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func aPresetsFileCanHoldLaddersBesidePresets() throws {
        let json = """
            [{"name": "tiny", "summary": "for tests", "format": "mp4", "audio": {"codec": "aac"}},
             {"name": "mobile", "summary": "two rungs for phones", "codec": "h264", "ladder": [
                {"name": "low", "short_side": 270, "bitrate": 400000, "at_most_30fps": true},
                {"name": "high", "short_side": 540, "bitrate": 1800000}]}]
            """
        let catalog = try catalog(from: json)
        #expect(catalog.presets.count == Preset.builtIn.count + 1)
        let mobile = try #require(catalog.ladder(named: "mobile"))
        #expect(
            mobile.rungs.map(\.name) == ["low", "high"] && mobile.rungs[0].atMost30fps && !mobile.rungs[1].atMost30fps
        )
        let options = try catalog.ladderOptions("mobile", codec: nil)
        #expect(options.rungs == mobile.rungs && options.codec == .h264 && options.ladder == "mobile")
        #expect(throws: MediaError.self) { try catalog.ladderOptions("mobile", codec: .hevc) }
        #expect { try catalog.ladderOptions("phone", codec: nil) } throws: { error in
            "\(error)".contains("unknown rung 'phone'") && "\(error)".contains("a ladder of the presets file: mobile")
        }
        #expect(try catalog.ladderOptions("720p,360p", codec: nil).rungs == nil)
    }

    @Test(
        arguments: [
            (
                #"[{"name": "m", "ladder": [{"name": "../x", "short_side": 360, "bitrate": 500000}]}]"#,
                "it names the rung's files"
            ),
            (
                #"[{"name": "m", "ladder": [{"name": "master", "short_side": 360, "bitrate": 500000}]}]"#,
                "not audio or master"
            ),
            (#"[{"name": "m", "ladder": [{"name": "Low", "short_side": 360, "bitrate": 500000}]}]"#, "lowercase"),
            (
                #"[{"name": "m", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}, {"name": "a", "short_side": 540, "bitrate": 900000}]}]"#,
                "appears twice"
            ),
            (
                #"[{"name": "m", "ladder": [{"name": "a", "short_side": 8, "bitrate": 500000}]}]"#,
                "an even number between 16 and 4320"
            ),
            (#"[{"name": "m", "ladder": [{"name": "a", "short_side": 360, "bitrate": 5}]}]"#, "bitrate is between"),
            (#"[{"name": "m", "ladder": []}]"#, "1 to 12 rungs"),
            (
                #"[{"name": "m", "ladder": [{"name": "x", "short_side": 240, "bitrate": 500000}, {"name": "x-iframes", "short_side": 360, "bitrate": 900000}]}]"#,
                "not ending in -iframes"
            ),
            (#"[{"name": "m", "ladder": [{"name": "a", "short_side": 17, "bitrate": 500000}]}]"#, "an even number"),
            (
                #"[{"name": " auto", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}]"#,
                "a ladder's name"
            ),
            (
                #"[{"name": "720p,360p", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}]"#,
                "a ladder's name"
            ),
            (#"[{"name": "720p", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}]"#, "a rung's name"),
            (
                #"[{"name": "m", "codec": "vp9", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}]"#,
                "expected"
            ),
            (
                #"[{"name": "m", "fps": 30, "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}]"#,
                "unknown key 'fps'"
            ),
            (
                #"[{"name": "m", "ladder": [{"name": "a", "size": 360, "short_side": 360, "bitrate": 500000}]}]"#,
                "unknown rung key 'size'"
            ),
            (
                #"[{"name": "m", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}, {"name": "m", "ladder": [{"name": "a", "short_side": 360, "bitrate": 500000}]}]"#,
                "defined twice"
            ),
        ] as [(String, String)]
    )
    func badLaddersAreExplained(json: String, reason: String) {
        #expect {
            try catalog(from: json)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func missingPresetsFileIsExplained() {
        #expect(throws: PresetFileError.self) { try PresetCatalog(customFile: "/nonexistent/presets.json") }
    }

    private func catalog(from json: String) throws -> PresetCatalog {
        let directory = try TemporaryDirectory("presets")
        defer { directory.remove() }
        let path = directory.file("presets.json")
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try PresetCatalog(customFile: path)
    }
}
