import ArgumentParser
import CommandLineSupport
import Media

struct PresetsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presets",
        abstract: "List the presets and the ffmpeg command equivalent to each.",
        discussion: """
            Size presets are caps: the picture fits inside the box (either orientation), keeps \
            its display aspect ratio, is never upscaled and has even dimensions. The ffmpeg \
            commands use the placeholders INPUT and OUTPUT; for a range, add -ss START -t \
            DURATION before -i. Custom presets (--presets FILE or JOBCTL_PRESETS) are a JSON list \
            with the fields of --json; an entry with a "ladder" key is a streaming ladder for \
            `jobctl hls --ladder NAME` (docs/streaming.md), listed after the presets. For an HDR \
            (PQ or HLG) source the second command applies: H.264 presets tone-map to BT.709 SDR, \
            hevc-* presets keep HDR in 10 bits (SOURCE: the mastering display and light level \
            `jobctl probe` shows); a preset's "hdr" field, or export --hdr, changes that.
            """
    )

    @Flag(help: "Print a JSON list of presets (name, summary, format, video, audio, ffmpeg, ffmpegHDR).")
    var json = false

    @OptionGroup var presets: PresetOptions
    @OptionGroup var global: GlobalOptions

    /// A preset as `presets --json` prints it: its fields plus its ffmpeg equivalent.
    struct Entry: Encodable {
        var preset: Preset
        func encode(to encoder: any Encoder) throws {
            try preset.encode(to: encoder)
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(preset.ffmpegCommand, forKey: .ffmpeg)
            try container.encodeIfPresent(preset.ffmpegHDRCommand, forKey: .ffmpegHDR)
        }
        enum Key: CodingKey { case ffmpeg, ffmpegHDR }
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let catalog = try presets.catalog()
            if json {
                try Terminal.printJSON(catalog.presets.map(Entry.init))
                return
            }
            for preset in catalog.presets {
                print("\(preset.name)  [\(preset.format.rawValue)]  \(preset.summary)")
                print("    \(preset.ffmpegCommand)")
                if let hdr = preset.ffmpegHDRCommand { print("    for an HDR source: \(hdr)") }
            }
            for ladder in catalog.ladders {
                let rungs = ladder.rungs.map { "\($0.name) \($0.bitRate / 1000) kb/s" }.joined(separator: ", ")
                print("\(ladder.name)  [hls --ladder, \(ladder.codec)]  \(ladder.summary ?? rungs)")
                if ladder.summary != nil { print("    \(rungs)") }
            }
        }
    }
}
