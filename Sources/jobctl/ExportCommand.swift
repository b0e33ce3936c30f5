import ArgumentParser
import CommandLineSupport
import Dispatch
import Foundation
import JobctlCore
import Media

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a file with a preset and an optional time range, in this process (no queue).",
        discussion: """
            The output is written to a hidden temporary file beside OUT and renamed into place \
            only when complete: a failed or interrupted export (Ctrl-C, SIGTERM, SIGHUP) leaves \
            nothing at OUT. An existing \
            regular file at OUT is replaced atomically; anything else there (a device such as \
            /dev/null, a FIFO, a directory, a symbolic link) and the input itself are refused \
            with output_forbidden before any work starts.

            Ranges (relative to the input's first frame): START+DURATION (1s+3s), START-END \
            (1:00-1:30.5), or START alone (to the end). Times are seconds (90, 1.5, 1.5s), \
            milliseconds (1500ms) or clock times (1:02.5, 00:01:02.500). Re-encoding presets cut \
            frame-accurately; passthrough starts at the keyframe at or before START.

            Examples:
              jobctl export talk.mov --preset low --range 1s+3s -o clip.mp4
              jobctl export talk.mov --preset passthrough --range 10s-20s -o cut.mov
              jobctl export podcast.flac --preset m4a -o podcast.m4a
            """
    )

    @Argument(help: "The input: a media file, an http(s) URL, or s3://BUCKET/KEY (AWS_* settings).")
    var input: String

    @Option(help: "The preset (see `jobctl presets`).")
    var preset: String

    @Option(help: ArgumentHelp("The part of the input to export (default: all of it).", valueName: "range"))
    var range: String?

    @Option(name: [.short, .customLong("output")], help: ArgumentHelp("Where to write the result.", valueName: "out"))
    var output: String

    @Option(help: "The container: mp4, mov or m4a (default: from OUT's extension, else the preset's).")
    var format: ContainerFormat?

    @Option(
        help: ArgumentHelp(
            "Cut the export into segments of about this length (e.g. 4s, 1:00), encode them in parallel and join them into one file, as a fleet does with submit --split. off (the default) exports in one piece.",
            valueName: "duration"
        )
    )
    var split: String?

    @Option(help: "With --split: segments encoded at once (default: the number of CPUs).")
    var splitParallel: Int?

    @Option(
        help: ArgumentHelp(
            "What an HDR (PQ or HLG) source becomes: auto (the default: hevc-* presets keep HDR in 10 bits, H.264 presets tone-map to BT.709 SDR), keep (HDR, or an error for an H.264 preset) or tonemap (SDR whatever the codec).",
            valueName: "mode"
        )
    )
    var hdr: HDRMode?

    @Flag(help: "Print the result as JSON (output, bytes, duration, actualRange, tracks) on stdout.")
    var json = false

    @OptionGroup(title: "Limits") var limits: LimitOptions
    @OptionGroup var presets: PresetOptions
    @OptionGroup var global: GlobalOptions

    func validate() throws {
        try RangeArgument.validate(range)
        if let split {
            do throws(MediaError) {
                _ = try SplitRequest(parsing: split)
            } catch {
                throw ValidationError(error.message.replacingOccurrences(of: "split ", with: "--split "))
            }
        }
        if let splitParallel, !(1...64).contains(splitParallel) {
            throw ValidationError("--split-parallel is between 1 and 64")
        }
        if output.contains("://") {
            throw ValidationError(
                "export writes a local file; to upload to a URL, queue a job: jobctl submit INPUT --preset P --output URL"
            )
        }
    }

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            let timeRange = try RangeArgument.timeRange(range)
            var preset = try presets.catalog().preset(named: preset)
            if let hdr {
                guard preset.video != nil else {
                    throw CommandFailure.usage("--hdr: preset '\(preset.name)' keeps no video")
                }
                preset.video?.hdr = hdr
            }
            // Before anything is read: never a device, a FIFO, a link or the input itself.
            try OutputDestination.check(output, input: input)
            let asset = try Asset(location: try ObjectStoreInput.openable(input), limits: limits.limits())
            // The temporary file names this process, so a later export to the same place can
            // tell a dead export's leftover (SIGKILL, a power cut) from a live one's.
            let pid = ProcessInfo.processInfo.processIdentifier
            let tag = "export-\(pid)-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
            ExportCommand.removeLeftovers(of: output)
            let session = try ExportCommand.session(
                asset: asset,
                preset: preset,
                output: output,
                format: format,
                timeRange: timeRange,
                tag: tag,
                split: split.map { try SplitRequest(parsing: $0) } ?? .off,
                parallel: splitParallel ?? ProcessInfo.processInfo.activeProcessorCount
            )

            // Ctrl-C, SIGTERM or SIGHUP (a closed terminal) cancels the export and removes its
            // temporary file; a second one removes it and exits at once. In place before the
            // export starts (a signal before then ends the process: nothing is written yet).
            let signals = await cancellingOnSignals(removing: [AssetWriter.temporaryPath(for: output, tag: tag)]) {
                session.cancel()
            }
            defer { for signal in signals { signal.cancel() } }

            let expected = try? timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
                .expectedDuration
            let bar = Terminal.stderrIsTTY && !json ? ProgressBar(total: expected.map { Double($0) / 1_000_000 }) : nil
            let progress = Task {
                while !Task.isCancelled, let bar {
                    bar.draw(fraction: session.progress)
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            defer {
                progress.cancel()
                bar?.clear()
            }
            let result = try await session.export()
            progress.cancel()
            bar?.clear()
            if json {
                try Terminal.printJSON(result)
            } else {
                printSummary(result, asset: asset)
            }
        }
    }

    /// Removes `.NAME.export-PID-*.jobctl.tmp` beside `output` left by exports that died
    /// (their process is gone) at least 10 minutes ago. A live export's file, or another
    /// host's on a shared directory (its PID means nothing here, but it is being written), stays.
    static func removeLeftovers(of output: String) {
        let directory = PathText.directory(of: output)
        let prefix = "." + (output as NSString).lastPathComponent + ".export-"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for entry in entries where entry.hasPrefix(prefix) && entry.hasSuffix(".jobctl.tmp") {
            let path = (directory as NSString).appendingPathComponent(entry)
            guard let pid = Int32(entry.dropFirst(prefix.count).prefix { $0 != "-" }), kill(pid, 0) != 0,
                errno == ESRCH,
                let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                modified.timeIntervalSinceNow < -600
            else { continue }
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    private func printSummary(_ result: ExportResult, asset: Asset) {
        let range = result.actualRange
        print(
            "\(result.output): \(Terminal.seconds(result.duration)), \(Terminal.bytes(result.bytes)) "
                + "(from \(Terminal.seconds(range.start)) to \(Terminal.seconds(range.start + range.duration)) of \(asset.displayName))"
        )
        for track in result.tracks {
            var line = "  #\(track.index) \(track.mediaType) \(track.codec)"
            if let width = track.width, let height = track.height { line += " \(width)x\(height)" }
            if let frames = track.frames { line += ", \(frames) frames" }
            if let rate = track.sampleRate, let channels = track.channels { line += " \(rate) Hz \(channels) ch" }
            if let samples = track.samples { line += ", \(samples) samples" }
            if let packets = track.packets { line += ", \(packets) packets copied" }
            print(line)
        }
        for warning in result.warnings ?? [] { Terminal.printError("warning: \(warning)") }
    }
}

/// What `export` runs: one session, or a split one (`--split`).
protocol RunningExport: Sendable {
    var progress: Double { get }
    func cancel()
    func export() async throws -> ExportResult
}

extension ExportSession: RunningExport {}
extension SplitExportSession: RunningExport {}

extension ExportCommand {
    static func session(
        asset: Asset,
        preset: Preset,
        output: String,
        format: ContainerFormat?,
        timeRange: TimeRange,
        tag: String,
        split: SplitRequest,
        parallel: Int
    ) throws -> any RunningExport {
        let duration =
            (try? timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName))
            .flatMap(\.expectedDuration) ?? 0
        guard let length = split.segmentLength(duration: duration, aliveWorkers: parallel) else {
            return ExportSession(
                asset: asset,
                preset: preset,
                outputPath: output,
                format: format,
                timeRange: timeRange,
                temporaryTag: tag
            )
        }
        // Scratch beside the output (its file system), hidden, removed when the export ends.
        let scratch = (PathText.directory(of: output) as NSString).appendingPathComponent(
            ".\((output as NSString).lastPathComponent).\(tag).split"
        )
        return SplitExportSession(
            asset: asset,
            preset: preset,
            outputPath: output,
            format: format,
            timeRange: timeRange,
            segmentLength: length,
            parallel: parallel,
            scratch: scratch,
            temporaryTag: tag
        )
    }
}
