import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media

/// The image options shared by `jobctl thumbnails` and `jobctl submit --kind thumbnails`.
struct ThumbnailArguments: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Times, comma-separated: seconds or clock times (1.5s, 1:02), percentages of the range (25%), end.",
            valueName: "times"
        )
    )
    var at: String?

    @Option(
        help: ArgumentHelp("An image every DURATION from the range's start (e.g. 10s).", valueName: "duration"),
        transform: MediaDuration.parse
    )
    var every: MediaDuration?

    @Option(help: ArgumentHelp("N images evenly spaced (the middle of N equal parts).", valueName: "n"))
    var count: Int?

    @Flag(help: "Each image is exactly the frame displayed at its time (zero tolerance; decodes more).")
    var exact = false

    @Option(
        help: ArgumentHelp(
            "How far from each time the frame may be, either way (default: any earlier keyframe, the fastest).",
            valueName: "duration"
        ),
        transform: MediaDuration.parse
    )
    var tolerance: MediaDuration?

    @Option(
        help: ArgumentHelp(
            "The largest image: WxH, Wx (a width) or xH (a height); aspect ratio kept, never upscaled.",
            valueName: "size"
        )
    )
    var size: MaximumSize?

    /// The kind's check (the API's, `submit`'s and the worker's), worded with these flags.
    func validate() throws { try ThumbnailsKind.validating(request) }

    /// These flags as the request of a `thumbnails` job.
    var request: ThumbnailsKind.Request {
        ThumbnailsKind.Request(
            at: at.map(ListValue.init),
            every: every?.text,
            count: count.map(WholeNumber.init),
            exact: exact ? true : nil,
            tolerance: tolerance?.text,
            size: size?.text
        )
    }
}

struct ThumbnailsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "thumbnails",
        abstract: "Write images of the video at given times into a directory, in this process (no queue).",
        discussion: """
            Like AVAssetImageGenerator: each image reports the time requested and the time of \
            the frame it shows. By default a frame may come from any keyframe up to the time \
            (fast: one keyframe decoded per image); --exact gives exactly the frame displayed at \
            each time, --tolerance 0.5s anything within half a second. Times past the end give \
            the last frame. Times are sorted and read in one forward pass over the file.

            Without --at, --every or --count: one image at 50%. Images are written as \
            DIR/thumb-001.jpg, thumb-002.jpg… in time order, all or none (a failure or Ctrl-C \
            leaves no image behind). Rotation and pixel aspect ratio are applied.

            Examples:
              jobctl thumbnails talk.mov --at 1s,25%,50%,end --size 320x -o thumbs/
              jobctl thumbnails talk.mov --count 8 --exact --format webp -o thumbs/
              jobctl thumbnails talk.mov --every 10s --range 1:00-5:00 --size 160x90 -o thumbs/
            """
    )

    @Argument(help: "The input: a media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @Option(help: "The image format: jpg, png or webp.")
    var format: ImageFormat = .jpeg

    @OptionGroup var images: ThumbnailArguments

    @Option(help: ArgumentHelp("Only this part of the input (percentages and `end` are of it).", valueName: "range"))
    var range: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp("The directory to write into.", valueName: "dir")
    )
    var output: String

    @Flag(help: "Print the images as JSON (name, bytes, width, height, requestedTime, actualTime) on stdout.")
    var json = false

    @OptionGroup(title: "Limits") var limits: LimitOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try RangeArgument.validate(range)
        if MediaLocation.isRemote(output) { throw ValidationError("thumbnails writes into a local directory") }
    }

    struct Report: Encodable {
        var directory: String
        var images: [ImageFile]
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let timeRange = try RangeArgument.timeRange(range)
            let asset = try Asset(location: try ObjectStoreInput.openable(input), limits: limits.limits())
            let options = try ThumbnailsKind.inProcessOptions(images.request, format: format.rawValue)
            let work = try ThumbnailsKind.work(on: asset, options: options, range: timeRange)
            let written = try await runInterruptibly(
                showingProgress: !json,
                total: nil,
                progress: { work.progress },
                cancel: { work.cancel() }
            ) {
                try await onDedicatedThread("jobctl.thumbnails") { () throws(MediaError) in
                    try work.session.run(directory: output)
                }
            }
            if json {
                try Terminal.printJSON(Report(directory: output, images: written))
                return
            }
            for image in written {
                print(
                    "\((output as NSString).appendingPathComponent(image.name)): \(image.width)x\(image.height), "
                        + "\(Terminal.bytes(image.bytes)), requested \(Terminal.seconds(image.requestedTime)), "
                        + "frame at \(Terminal.seconds(image.actualTime))"
                )
            }
        }
    }
}
