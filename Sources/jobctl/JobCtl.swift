import ArgumentParser

@main
struct JobCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobctl",
        abstract: "Transcode media on Linux servers: AVFoundation-style exports over FFmpeg.",
        discussion: """
            Export a file now with `jobctl export`, inspect one with `jobctl probe`, and list the \
            presets (with the ffmpeg command equivalent to each) with `jobctl presets`.

            Exit codes: 0 success, 1 the operation failed (the error line names a code, such as \
            input_not_found), 64 usage error, 130 interrupted.
            """,
        version: JobCtl.version,
        subcommands: [ExportCommand.self, ProbeCommand.self, PresetsCommand.self, SampleCommand.self]
    )

    static let version = "0.1.0"
}
