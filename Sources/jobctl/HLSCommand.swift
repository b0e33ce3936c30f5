import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media
import Streaming

extension Ladder.Codec: ExpressibleByArgument {}

/// The ladder options shared by `jobctl hls` and `jobctl submit --kind hls`.
struct LadderArguments: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "auto (after Apple's HLS table, rungs above the source dropped), rungs such as 1080p,720p,480p, or a ladder of the presets file.",
            valueName: "rungs"
        )
    )
    var ladder: String?

    @Option(help: ArgumentHelp("The video codec: h264, or hevc (hvc1 in fMP4).", valueName: "codec"))
    var codec: Ladder.Codec?

    /// These flags as the request of an `hls` job (a presets file's ladder is one by name).
    var request: HLSKind.Request { HLSKind.Request(ladder: ladder, codec: codec?.rawValue) }
}

struct HLSCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hls",
        abstract:
            "Make an adaptive-streaming ladder (HLS and DASH over CMAF segments) in a directory, in this process.",
        discussion: """
            Decodes the input once and encodes every rendition from it: H.264 (or HEVC) video \
            renditions sized after Apple's HLS authoring table, never above the source, with an \
            IDR every 2 s at the same times in all of them and 6 s segments; the audio once, as \
            AAC-LC. Writes into DIR, flat: NAME-init.mp4 and NAME-00001.m4s… per rendition, \
            NAME.m3u8 and NAME-iframes.m3u8, master.m3u8, manifest.mpd and player.html (open it \
            in a browser that plays HLS). The playlists are written from the segments as they \
            came out and checked against the streaming rules (docs/streaming.md); a broken rule \
            fails the ladder and nothing is shown. Media first, playlists last, all or none.

            Examples:
              jobctl hls talk.mov -o talk/
              jobctl hls talk.mov --ladder 720p,360p --range 10s+60s -o clip/
              jobctl hls talk.mov --codec hevc -o talk-hevc/
              jobctl hls talk.mov --presets ladders.json --ladder mobile -o talk/
            """
    )

    @Argument(help: "The input: a media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @OptionGroup var ladder: LadderArguments

    @Option(help: ArgumentHelp("Only this part of the input.", valueName: "range"))
    var range: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("The directory to write into (created if missing).", valueName: "dir")
    )
    var output: String

    @Flag(help: "Print the ladder's report (renditions, bandwidths, findings, files) as JSON on stdout.")
    var json = false

    @OptionGroup var presets: PresetOptions
    @OptionGroup(title: "Limits") var limits: LimitOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try RangeArgument.validate(range)
        if MediaLocation.isRemote(output) { throw ValidationError("hls writes into a local directory") }
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let timeRange = try RangeArgument.timeRange(range)
            let asset = try Asset(location: try ObjectStoreInput.openable(input), limits: limits.limits())
            let options = try HLSKind.inProcessOptions(ladder.request, catalog: try presets.catalog())
            let work = try HLSKind.work(on: asset, options: options, range: timeRange)
            let result = try await runInterruptibly(
                showingProgress: !json,
                total: nil,
                progress: { work.progress },
                cancel: { work.cancel() }
            ) {
                try await onDedicatedThread("jobctl.hls") { () throws(MediaError) in
                    try work.session.run(directory: output)
                }
            }
            if json {
                try Terminal.printJSON(result)
                return
            }
            let master = (output as NSString).appendingPathComponent(result.master)
            let rungs = result.renditions.map { "\($0.name) \($0.width)x\($0.height) \($0.bandwidth / 1000) kb/s" }
            let audio = result.audio.map { ["audio \($0.codecs) \($0.bitrate / 1000) kb/s"] } ?? []
            print("\(master): \((rungs + audio).joined(separator: ", ")); \(Terminal.seconds(result.duration))")
            if !result.dropped.isEmpty {
                print("left out (taller than the source): \(result.dropped.joined(separator: ", "))")
            }
            for finding in result.report.should { print("note: \(finding)") }
            print("play it: \((output as NSString).appendingPathComponent(result.player))")
        }
    }
}
