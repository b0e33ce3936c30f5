import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media

/// The storyboard options shared by `jobctl storyboard` and `jobctl submit --kind storyboard`.
struct StoryboardArguments: ParsableArguments {
    @Option(help: ArgumentHelp("How many tiles (default: 50 under 15 minutes, 100 above).", valueName: "n"))
    var tiles: Int?

    @Option(
        name: .customLong("tile-size"),
        help: ArgumentHelp("The largest tile: WxH, Wx or xH (default 256x).", valueName: "size")
    )
    var tileSize: MaximumSize?

    @Option(help: ArgumentHelp("Tiles per row of the sprite (default 10).", valueName: "n"))
    var columns: Int?

    /// The kind's check (the API's, `submit`'s and the worker's), worded with these flags.
    func validate() throws { try StoryboardKind.validating(request) }

    /// These flags as the request of a `storyboard` job.
    var request: StoryboardKind.Request {
        StoryboardKind.Request(
            tiles: tiles.map(WholeNumber.init),
            tileSize: tileSize?.text,
            columns: columns.map(WholeNumber.init)
        )
    }
}

struct StoryboardCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storyboard",
        abstract: "Write a hover-preview storyboard (sprite sheet, WebVTT, JSON) into a directory, in this process.",
        discussion: """
            Writes DIR/storyboard.jpg (tiles left to right, top to bottom), DIR/storyboard.vtt \
            (one cue per tile: `storyboard.jpg#xywh=x,y,w,h`, contiguous, covering the range) and \
            DIR/storyboard.json ({url, tile_width, tile_height, duration, tiles: [{start, x, y}]}), \
            all or none. Tiles are evenly spaced; each is the last keyframe at or before the \
            middle of its span. Cue times are relative to the range's start.

            Examples:
              jobctl storyboard talk.mov -o preview/
              jobctl storyboard talk.mov --tiles 100 --tile-size 160x -o preview/
            """
    )

    @Argument(help: "The input: a media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @Option(help: "The sprite's image format: jpg, png or webp.")
    var format: ImageFormat = .jpeg

    @OptionGroup var storyboard: StoryboardArguments

    @Option(help: ArgumentHelp("Only this part of the input.", valueName: "range"))
    var range: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("The directory to write into.", valueName: "dir")
    )
    var output: String

    @Flag(help: "Print the files and the storyboard's description as JSON on stdout.")
    var json = false

    @OptionGroup(title: "Limits") var limits: LimitOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try RangeArgument.validate(range)
        if MediaLocation.isRemote(output) { throw ValidationError("storyboard writes into a local directory") }
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let timeRange = try RangeArgument.timeRange(range)
            let asset = try Asset(location: try ObjectStoreInput.openable(input), limits: limits.limits())
            let options = try StoryboardKind.inProcessOptions(storyboard.request, format: format.rawValue)
            let work = try StoryboardKind.work(on: asset, options: options, range: timeRange)
            let result = try await runInterruptibly(
                showingProgress: !json,
                total: nil,
                progress: { work.progress },
                cancel: { work.cancel() }
            ) {
                try await onDedicatedThread("jobctl.storyboard") { () throws(MediaError) in
                    try work.session.run(directory: output)
                }
            }
            if json {
                try Terminal.printJSON(result)
                return
            }
            let board = result.description
            print(
                "\(result.files.map(\.path).joined(separator: ", ")): \(board.tiles.count) tiles of "
                    + "\(board.tile_width)x\(board.tile_height) in \(result.columns)x\(result.rows), "
                    + "one per \(Terminal.seconds(board.duration / Double(board.tiles.count)))"
            )
        }
    }
}
