import ArgumentParser
import CommandLineSupport
import Media

struct SampleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample",
        abstract: "Write a synthetic test clip (colour bars, a moving box, a tone) with jobctl's own writer.",
        discussion:
            "Handy to try presets without any media at hand: `jobctl sample talk.mp4 && jobctl export talk.mp4 --preset low --range 1s+3s -o clip.mp4`."
    )

    @Argument(help: "Where to write the clip (.mp4 or .mov).")
    var output: String

    @Option(help: "Length in seconds.")
    var seconds = 10

    @Option(help: "Picture size, WIDTHxHEIGHT (even numbers).")
    var size = "640x360"

    @Option(help: "Frames per second.")
    var fps = 25

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        guard parsedSize != nil else {
            throw ValidationError("--size is WIDTHxHEIGHT with even numbers of at least 16, e.g. 1280x720")
        }
        guard (1...3600).contains(seconds) else { throw ValidationError("--seconds is between 1 and 3600") }
        guard (1...120).contains(fps) else { throw ValidationError("--fps is between 1 and 120") }
    }

    private var parsedSize: PictureSize? {
        let parts = size.lowercased().split(separator: "x")
        guard parts.count == 2, let width = Int(parts[0]), let height = Int(parts[1]),
            width >= 16, height >= 16, width % 2 == 0, height % 2 == 0, width <= 7680, height <= 4320
        else { return nil }
        return PictureSize(width: width, height: height)
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let bytes = try SampleClip.write(to: output, seconds: seconds, size: parsedSize!, frameRate: fps)
            print("\(output): \(seconds) s of \(size) at \(fps) fps with a stereo tone, \(Terminal.bytes(bytes))")
        }
    }
}
