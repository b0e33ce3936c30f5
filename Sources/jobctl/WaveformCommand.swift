import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media

/// The peak options shared by `jobctl waveform` and `jobctl submit --kind waveform`.
struct WaveformArguments: ParsableArguments {
    @Option(
        name: .customLong("samples-per-pixel"),
        help: ArgumentHelp("Input samples per point (default 256; at least 2).", valueName: "n")
    )
    var samplesPerPixel: Int?

    @Option(
        name: .customLong("pixels-per-second"),
        help: ArgumentHelp("Points per second instead (samples per point = rate / this).", valueName: "n")
    )
    var pixelsPerSecond: Int?

    @Option(help: "8 or 16 bits per value (default 16).")
    var bits: Int?

    @Flag(name: .customLong("split-channels"), help: "One min/max pair per channel instead of the channels averaged.")
    var splitChannels = false

    @Option(
        help: ArgumentHelp(
            "Read only this audio track (its index, as ffprobe numbers streams); default: all of them, mixed.",
            valueName: "index"
        )
    )
    var track: Int?

    @Option(help: ArgumentHelp("The PNG's width in pixels (default 1800).", valueName: "pixels"))
    var width: Int?

    @Option(help: ArgumentHelp("The PNG's height in pixels (default 280).", valueName: "pixels"))
    var height: Int?

    @Option(help: ArgumentHelp("The PNG's waveform colour, RRGGBB (default 3A6EA5).", valueName: "hex"))
    var color: String?

    @Option(help: ArgumentHelp("The PNG's background colour, RRGGBB (default FFFFFF).", valueName: "hex"))
    var background: String?

    /// The kind's check (the API's, `submit`'s and the worker's), worded with these flags. The
    /// picture's flags are checked whether or not a PNG is among the files (`submit --files`,
    /// `waveform --png`), so a bad one is refused even where it would go unused.
    func validate() throws {
        var request = request
        request.files = ListValue("png")
        try WaveformKind.validating(request)
    }

    /// These flags as the request of a `waveform` job (its `files` is `submit --files`, or the
    /// outputs `jobctl waveform` was given).
    var request: WaveformKind.Request {
        var request = WaveformKind.Request()
        request.samplesPerPixel = samplesPerPixel.map(WholeNumber.init)
        request.pixelsPerSecond = pixelsPerSecond.map(WholeNumber.init)
        request.bits = bits.map(WholeNumber.init)
        request.splitChannels = splitChannels ? true : nil
        request.track = track.map(WholeNumber.init)
        request.width = width.map(WholeNumber.init)
        request.height = height.map(WholeNumber.init)
        request.color = color
        request.background = background
        return request
    }
}

struct WaveformCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "waveform",
        abstract: "Compute an audio waveform (peaks for audiowaveform/peaks.js, and a PNG), in this process.",
        discussion: """
            Reads the audio (several audio tracks are mixed, at the highest sample rate and \
            channel count among them; --track N reads one), converts each sample to 16 bits, \
            averages the channels (or keeps them apart with --split-channels), and keeps the \
            minimum and maximum of every --samples-per-pixel samples (default 256; the last, \
            partial column is kept). Only the points are kept in memory (2.6 MB for an hour at the \
            default scale).

            Outputs, written all or none: -o FILE.json (the audiowaveform JSON format, version 2), \
            --dat FILE.dat (its binary format: version 1 for one channel, 2 for more), \
            --png FILE.png (a picture of it, --width x --height). Give at least one.

            Examples:
              jobctl waveform podcast.mp3 -o peaks.json
              jobctl waveform talk.mov --pixels-per-second 20 --bits 8 -o peaks.json --dat peaks.dat
              jobctl waveform talk.mov --png waveform.png --width 1800 --height 280
            """
    )

    @Argument(help: "The input: a media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("The JSON peaks file.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("The binary peaks file (.dat).", valueName: "file"))
    var dat: String?

    @Option(help: ArgumentHelp("A PNG picture of the waveform.", valueName: "file"))
    var png: String?

    @OptionGroup var peaks: WaveformArguments

    @Option(help: ArgumentHelp("Only this part of the input.", valueName: "range"))
    var range: String?

    @Flag(help: "Print the files and the waveform's parameters as JSON on stdout.")
    var json = false

    @OptionGroup(title: "Limits") var limits: LimitOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try RangeArgument.validate(range)
        let paths = [output, dat, png].compactMap { $0 }
        guard !paths.isEmpty else { throw ValidationError("give at least one of -o FILE.json, --dat FILE, --png FILE") }
        if paths.contains(where: MediaLocation.isRemote) { throw ValidationError("waveform writes local files") }
        if Set(paths).count != paths.count { throw ValidationError("each output needs its own file") }
    }

    /// The request of a job that writes these files. Without `--png` the picture's flags are
    /// left out (a job refuses them without a PNG to draw): `validate` checked them, unused.
    var request: WaveformKind.Request {
        var request = peaks.request
        if png == nil { (request.width, request.height, request.color, request.background) = (nil, nil, nil, nil) }
        var files: [String] = []
        if output != nil { files.append("json") }
        if dat != nil { files.append("dat") }
        if png != nil { files.append("png") }
        request.files = ListValue(files.joined(separator: ","))
        return request
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let timeRange = try RangeArgument.timeRange(range)
            for path in [output, dat, png].compactMap({ $0 }) { try OutputDestination.check(path, input: input) }
            let asset = try Asset(location: try ObjectStoreInput.openable(input), limits: limits.limits())
            let options = try WaveformKind.inProcessOptions(request)
            let work = try WaveformKind.work(on: asset, options: options, range: timeRange)
            let outputs = WaveformOutputs(json: output, dat: dat, png: png)
            let result = try await runInterruptibly(
                showingProgress: !json,
                total: nil,
                progress: { work.progress },
                cancel: { work.cancel() }
            ) {
                try await onDedicatedThread("jobctl.waveform") { () throws(MediaError) in
                    try work.reader.run(writing: outputs)
                }
            }
            if json {
                try Terminal.printJSON(result)
                return
            }
            print(
                "\(result.files.map(\.path).joined(separator: ", ")): \(result.length) points of "
                    + "\(result.samplesPerPixel) samples at \(result.sampleRate) Hz, \(result.channels) channel(s), "
                    + "\(Terminal.seconds(result.duration)) of audio"
            )
        }
    }
}
