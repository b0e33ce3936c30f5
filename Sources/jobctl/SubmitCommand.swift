import ArgumentParser
import CommandLineSupport
import Foundation
import JobKinds
import JobctlCore
import Media
import Queue
import SafeHTTP
import Webhooks

struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Queue a job (an export, thumbnails, a storyboard, a waveform or an HLS ladder); prints its id.",
        discussion: """
            Checks everything that can be checked without reading media (the preset exists, the \
            range parses, the URLs are allowed) and inserts the job. A worker (`jobctl worker`) \
            runs it. A missing or unreadable input fails the job with its error code. \
            Thumbnails, storyboards and waveforms of a local input are refused here when it has \
            no video (or no audio) track.

            --kind thumbnails | storyboard | waveform | hls take the options of `jobctl thumbnails`, \
            `jobctl storyboard`, `jobctl waveform` and `jobctl hls` (below) and write a set of files into the \
            output directory (default: beside the input, NAME.KIND/), all at once. A remote \
            output for them is a URL template: {name} becomes each file's name \
            ('https://bucket.example/thumbs/{name}?sig=...').

            An export's output defaults to INPUT's directory, named NAME.PRESET.EXT. Relative paths are \
            made absolute, so workers started elsewhere find them.

            INPUT may be an http(s) URL (read by the worker with Range requests) and --output an \
            http(s) URL, such as a pre-signed object-store URL: the worker writes the file \
            locally, then uploads it with PUT once it is complete. Jobs, logs and webhooks show \
            such URLs without their query string (the signature).

            Examples:
              jobctl submit talk.mov --preset low --range 1s+3s
              jobctl submit a.mov --preset 1280x720 --priority 10 --idempotency-key upload-77 --json
              jobctl submit b.mov --preset low --wait --timeout 10m
              jobctl submit https://media.example/in/talk.mov --preset 1280x720 \\
                  --output 'https://bucket.example/out/talk.mp4?X-Signature=...'
              jobctl submit talk.mov --kind thumbnails --at 1s,50%,end --size 320x -o thumbs/
              jobctl submit talk.mov --kind storyboard --tiles 50
              jobctl submit talk.mov --kind waveform --files json,png --pixels-per-second 20
              jobctl submit talk.mov --kind hls --ladder 720p,360p -o talk-hls/
            """
    )

    @Argument(help: "The input: a media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @Option(help: ArgumentHelp("What to make: \(JobKinds.names) (default export).", valueName: "kind"))
    var kind = JobKind.export.rawValue

    @Option(
        help: ArgumentHelp(
            "The kind's request as JSON, as the API takes it in the kind's field (instead of the kind's flags).",
            valueName: "json"
        )
    )
    var options: String?

    @Option(help: "The preset (see `jobctl presets`); exports only, required for them.")
    var preset: String?

    @Option(help: ArgumentHelp("The part of the input to use, e.g. 1s+3s, 1:00-1:30, 90.", valueName: "range"))
    var range: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp(
            "Where to write the result: a path, an http(s) URL to PUT it to, or s3://BUCKET/KEY (the workers' AWS_* settings; a file set's with {name}) (default: beside the input).",
            valueName: "path|url"
        )
    )
    var output: String?

    @Option(
        help: ArgumentHelp(
            "Exports: the container, mp4, mov or m4a (default: from the output's extension, else the preset's). Thumbnails and storyboards: the image format, jpg (default), png or webp.",
            valueName: "format"
        )
    )
    var format: String?

    @Option(help: ArgumentHelp("A URL that receives the job's outcome (signed POST).", valueName: "url"))
    var webhook: String?

    @Option(help: "Higher runs first.")
    var priority = 0

    @Option(help: "Attempts before a retryable failure is final.")
    var maxAttempts = 3

    @Option(
        help: ArgumentHelp(
            "Submitting again with the same key returns the existing job instead of a duplicate.",
            valueName: "key"
        )
    )
    var idempotencyKey: String?

    @Option(help: ArgumentHelp("A key=value pair kept with the job (repeatable).", valueName: "key=value"))
    var metadata: [String] = []

    @Flag(help: "Print the job as JSON instead of its id.")
    var json = false

    @Flag(
        help:
            "Allow a webhook, input URL or output URL on loopback or a private network (self-hosted setups). Env: JOBCTL_ALLOW_PRIVATE_WEBHOOKS=1."
    )
    var allowPrivateWebhooks = false

    @Flag(help: "Wait until the job ends; exit 0 completed, 1 failed, 3 cancelled, 4 timed out.")
    var wait = false

    @Option(help: ArgumentHelp("With --wait: give up after this long (e.g. 10m).", valueName: "duration"))
    var timeout: DurationArgument?

    @Option(
        help: ArgumentHelp(
            "One more output of the input, with its kind's defaults (repeatable): each runs as a child job and the webhook reports them all at once. Its output is the job's with the extension replaced by the kind (talk.720p.thumbnails/).",
            valueName: "kind"
        )
    )
    var also: [String] = []

    @Option(
        help: ArgumentHelp(
            "Split an export into segments that workers encode in parallel and its last attempt joins into one file: auto (an input longer than 2 min, when more than one worker is alive), off (the default), or a segment length such as 30s. The workers share a --scratch directory.",
            valueName: "auto|off|duration"
        )
    )
    var split: String?

    @OptionGroup(title: "Thumbnails (--kind thumbnails)") var thumbnails: ThumbnailArguments
    @OptionGroup(title: "Storyboard (--kind storyboard)") var storyboard: StoryboardArguments
    @OptionGroup(title: "Adaptive streaming (--kind hls)") var ladder: LadderArguments
    @OptionGroup(title: "Waveform (--kind waveform)") var waveform: WaveformArguments

    @Option(
        help: ArgumentHelp(
            "Waveform files to write: json (peaks.json), dat (peaks.dat), png (waveform.png); default json.",
            valueName: "list"
        )
    )
    var files: String?

    @OptionGroup var presets: PresetOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    /// What only the command line has: its own grammar. Every rule about the job itself is
    /// `Submission.request`'s, shared with the API.
    func validate() throws {
        try validateKind()
        for pair in metadata where !pair.contains("=") || pair.hasPrefix("=") {
            throw ValidationError("--metadata takes key=value, not '\(pair)'")
        }
        if timeout != nil && !wait { throw ValidationError("--timeout goes with --wait") }
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            var policy = AddressPolicy.fromEnvironment()
            if allowPrivateWebhooks { policy.allowPrivate = true }
            var draft = SubmissionDraft(
                kind: kind,
                input: input,
                output: output,
                format: format,
                range: range.map { .text($0) },
                priority: priority,
                maxAttempts: maxAttempts,
                metadata: metadataPairs,
                webhook: webhook,
                idempotencyKey: idempotencyKey,
                kindFields: try kindFields(),
                also: also.map { SubmissionDraft.AlsoDraft(kind: $0) }
            )
            draft.split = split
            let rules = SubmissionRules(
                place: .host(currentDirectory: FileManager.default.currentDirectoryPath),
                // Only an export or a ladder reads the presets file (a broken one stops nothing else).
                catalog: [JobKind.export.rawValue, JobKind.hls.rawValue].contains(kind)
                    ? try presets.catalog() : try PresetCatalog(customFile: nil),
                addressPolicy: policy,
                naming: .flags
            )
            let request: JobRequest
            do throws(SubmissionError) {
                request = try Submission.request(draft, rules: rules)
            } catch {
                // What was typed is a usage error (64); what the input turned out to be, the
                // code's own exit.
                throw error.foundInMedia
                    ? CommandFailure.failed(code: error.code, error.message)
                    : CommandFailure.refused(code: error.code, error.message)
            }
            try await database.withStore { store in
                let (job, created) = try await store.submit(request)
                if !created {
                    Terminal.printError(
                        "note: idempotency key '\(idempotencyKey ?? "")' already used by job \(job.id); not submitted again"
                    )
                }
                if json && !wait { try JobFormatting.printJSON(job) } else if !wait { print(job.id) }
                if wait {
                    if !json { Terminal.printError("submitted \(job.id); waiting") }
                    try await WaitCommand.waitFor(job.id, store: store, timeout: timeout?.duration, json: json)
                }
            }
        }
    }

    /// `--metadata key=value`… as a map (a later key wins).
    var metadataPairs: [String: String] {
        Dictionary(
            metadata.compactMap { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            },
            uniquingKeysWith: { $1 }
        )
    }
}
