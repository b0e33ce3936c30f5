import ArgumentParser

@main
struct JobCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "jobctl",
        abstract: "Transcode media on Linux servers: AVFoundation-style exports over FFmpeg.",
        discussion: """
            Queue exports with `jobctl submit` and run them with `jobctl worker` (as many worker \
            processes as you like share one job database), or export a file right now with \
            `jobctl export`. Inspect inputs with `jobctl probe`; `jobctl presets` lists the presets \
            with the ffmpeg command equivalent to each.

            Exit codes: 0 success, 1 the operation failed (the error line names a code, such as \
            input_not_found), 64 usage error, 130 interrupted.
            """,
        version: JobCtl.version,
        subcommands: [
            SubmitCommand.self, ListCommand.self, ShowCommand.self, CancelCommand.self, RetryCommand.self, WaitCommand.self,
            WatchCommand.self, WorkerCommand.self, WorkersCommand.self, MigrateCommand.self, WebhooksCommand.self,
            ExportCommand.self, ProbeCommand.self, PresetsCommand.self, SampleCommand.self, BenchCommand.self,
        ]
    )

    static let version = "0.1.0"
}
