import ArgumentParser
import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP
import Submission
import Webhooks

struct SubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Queue a job (an export, thumbnails, a storyboard or a waveform); prints its id.",
        discussion: """
            Checks everything that can be checked without reading media (the preset exists, the \
            range parses, the URLs are allowed) and inserts the job. A worker (`jobctl worker`) \
            runs it. A missing or unreadable input fails the job with its error code. \
            Thumbnails, storyboards and waveforms of a local input are refused here when it has \
            no video (or no audio) track.

            --kind thumbnails | storyboard | waveform take the options of `jobctl thumbnails`, \
            `jobctl storyboard` and `jobctl waveform` (below) and write a set of files into the \
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
            """
    )

    @Argument(help: "The input: a media file, or an http(s) URL.")
    var input: String

    @Option(help: "What to make: export (default), thumbnails, storyboard or waveform.")
    var kind: JobKind = .export

    @Option(help: "The preset (see `jobctl presets`); exports only, required for them.")
    var preset: String?

    @Option(help: ArgumentHelp("The part of the input to use, e.g. 1s+3s, 1:00-1:30, 90.", valueName: "range"))
    var range: String?

    @Option(
        name: [.short, .customLong("output")],
        help: ArgumentHelp(
            "Where to write the result: a path, or an http(s) URL to PUT it to (default: beside the input).",
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

    @OptionGroup(title: "Thumbnails (--kind thumbnails)") var thumbnails: ThumbnailArguments
    @OptionGroup(title: "Storyboard (--kind storyboard)") var storyboard: StoryboardArguments
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

    func validate() throws {
        try RangeArgument.validate(range)
        try validateKind()
        guard maxAttempts >= 1 && maxAttempts <= 100 else {
            throw ValidationError("--max-attempts is between 1 and 100")
        }
        guard (-1000...1000).contains(priority) else { throw ValidationError("--priority is between -1000 and 1000") }
        for pair in metadata where !pair.contains("=") || pair.hasPrefix("=") {
            throw ValidationError("--metadata takes key=value, not '\(pair)'")
        }
        if let problem = Submission.metadataProblem(metadataPairs) { throw ValidationError("--" + problem) }
        if timeout != nil && !wait { throw ValidationError("--timeout goes with --wait") }
        if let webhook {
            guard let url = URL(string: webhook), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host?.isEmpty == false
            else {
                throw ValidationError("--webhook must be an http(s) URL, not '\(MediaLocation.displayed(webhook))'")
            }
        }
        for (flag, location) in [("INPUT", input), ("--output", output ?? "")] where location.contains("://") {
            let scheme = String(location[..<location.range(of: "://")!.lowerBound]).lowercased()
            guard ["http", "https"].contains(scheme) || (scheme == "file" && flag == "INPUT") else {
                throw ValidationError("\(flag) is a local path or an http(s) URL, not a \(scheme):// URL")
            }
        }
        if let key = idempotencyKey, key.isEmpty || key.count > 200 {
            throw ValidationError("--idempotency-key is 1 to 200 characters")
        }
    }

    /// `webhook_forbidden`, `output_forbidden` or `input_unreadable` (exit 64) for a URL the
    /// address policy refuses without resolving anything (a private address, `localhost`, a
    /// malformed URL).
    private func refuseAddresses(webhook: String?, output: String?, input: String?, policy: AddressPolicy) throws {
        for (location, code, what): (String?, ErrorCode, String) in [
            (webhook, .webhookForbidden, "receivers"),
            (output.flatMap { MediaLocation.isRemote($0) ? $0 : nil }, .outputForbidden, "storage"),
            (input.flatMap { MediaLocation.isRemote($0) ? $0 : nil }, .inputUnreadable, "media"),
        ] {
            guard let location, let refusal = policy.staticRefusal(for: location) else { continue }
            // A malformed URL is refused whatever the address policy; only an address is lifted.
            let malformed =
                (try? URLShape.parse(location.replacingOccurrences(of: "{name}", with: "name")).get()) == nil
            throw CommandFailure.refused(
                code: code,
                "\(MediaLocation.displayed(location)): \(refusal)"
                    + (malformed ? "" : " (--allow-private-webhooks lifts this for self-hosted \(what))")
            )
        }
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let timeRange = try range.map { try TimeRange(parsing: $0) }
            let input = SubmitCommand.absolute(self.input)
            // The cheap refusals first (addresses), the look at the input's tracks last.
            var policy = AddressPolicy.fromEnvironment()
            if allowPrivateWebhooks { policy.allowPrivate = true }
            try refuseAddresses(
                webhook: webhook,
                output: self.output.map(SubmitCommand.absolute),
                input: input,
                policy: policy
            )
            let work = try Submission.plan(
                try recipe(),
                input: input,
                output: self.output,
                range: timeRange ?? .all
            )
            let output = SubmitCommand.absolute(self.output ?? work.defaultOutput)
            if self.output == nil { try refuseAddresses(webhook: nil, output: output, input: nil, policy: policy) }
            let request = JobRequest(
                kind: kind,
                input: input,
                output: output,
                preset: work.preset,
                presetSettings: work.settings,
                format: work.format,
                range: timeRange.map {
                    Job.Range(start: Double($0.start) / 1e6, duration: $0.duration.map { Double($0) / 1e6 })
                },
                priority: priority,
                maxAttempts: maxAttempts,
                idempotencyKey: idempotencyKey,
                metadata: metadataPairs,
                webhook: webhook
            )
            try Submission.checkLocalOutput(output, input: input, kind: kind)
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

    static func absolute(_ path: String) -> String {
        if path.contains("://") || path.hasPrefix("/") { return path }
        return URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL.path
    }
}
