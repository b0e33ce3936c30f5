import CommandLineSupport
import Foundation
import JobctlCore
import Queue

/// How jobs look to people (`--json` prints the job JSON instead).
enum JobFormatting {
    /// `0193…  completed  100%  low  talk.mov → talk.low.mp4`, control characters escaped
    /// (`Terminal.shown`: tenants' paths and names must not reach the terminal raw).
    static func line(_ job: Job) -> String { Terminal.shown(rawLine(job)) }

    private static func rawLine(_ job: Job) -> String {
        let progress = job.status == .reading ? String(format: "%3d%%", JobProgress.wholePercent(job.progress)) : "    "
        var line =
            "\(job.id)  \(job.status.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)) \(progress)  \(job.preset)  \(job.displayInput) → \(job.displayOutput)"
        if let error = job.error, job.status != .completed { line += "  [\(error.code)]" }
        return line
    }

    /// Every field of the job, a line each, control characters escaped (`Terminal.shown`).
    static func details(_ job: Job) -> String { rawDetails(job).map(Terminal.shown).joined(separator: "\n") }

    private static func rawDetails(_ job: Job) -> [String] {
        var lines = ["job \(job.id)"]
        lines.append(
            "  status    \(job.status)" + (job.cancelRequested ? " (cancellation requested)" : "")
                + (job.status == .reading ? String(format: ", %.0f%%", job.progress * 100) : "")
        )
        lines.append(
            "  kind      \(job.kind.rawValue), preset \(job.preset)" + (job.format.map { ", format \($0)" } ?? "")
        )
        lines.append("  input     \(job.displayInput)")
        lines.append("  output    \(job.displayOutput)")
        if let range = job.range {
            lines.append("  range     from \(range.start) s" + (range.duration.map { " for \($0) s" } ?? " to the end"))
        }
        lines.append(
            "  attempt   \(job.attempt) of \(job.maxAttempts), priority \(job.priority)"
                + (job.worker.map { ", worker \($0)" } ?? "")
        )
        lines.append("  created   \(Job.timestamp(job.createdAt))")
        if let started = job.startedAt { lines.append("  started   \(Job.timestamp(started))") }
        if let finished = job.finishedAt { lines.append("  finished  \(Job.timestamp(finished))") }
        if job.status == .unknown && job.runAt > Date() { lines.append("  next try  \(Job.timestamp(job.runAt))") }
        for track in job.tracks {
            lines.append(
                "  track #\(track.index) \(track.mediaType) \(track.codec ?? "?"): \(track.status), read \(track.read), written \(track.written)"
            )
        }
        if let error = job.error {
            lines.append("  error     \(error.code): \(error.message)" + (error.retryable ? " (retryable)" : ""))
        }
        if let result = job.result {
            lines += resultLines(result, job: job)
        }
        if let webhook = job.webhook { lines.append("  webhook   \(MediaLocation.displayed(webhook))") }
        for (key, value) in job.metadata.sorted(by: { $0.key < $1.key }) { lines.append("  meta      \(key)=\(value)") }
        return lines
    }

    /// A graph's parent's children: the tally, then a line each (index, id, status, progress,
    /// kind or range, worker, encode speed).
    static func childLines(_ job: Job, _ children: [Job]) -> [String] {
        guard let tally = job.children else { return [] }
        var lines = [
            "  children  \(tally.completed) of \(tally.total) completed"
                + (tally.failed > 0 ? ", \(tally.failed) failed" : "")
                + (tally.cancelled > 0 ? ", \(tally.cancelled) cancelled" : "")
        ]
        for child in children {
            let summary = ChildSummary(child)
            var line =
                "  child #\(summary.index) \(child.id) \(child.status.rawValue) \(JobProgress.wholePercent(child.progress))%  \(child.kind.rawValue)"
            if let range = child.range {
                line += String(
                    format: " %.3f–%@ s",
                    range.start,
                    range.duration.map { String(format: "%.3f", range.start + $0) } ?? "end"
                )
            }
            if let worker = child.worker { line += "  worker \(worker)" }
            if let fps = summary.fps { line += String(format: "  %.1f fps", fps) }
            lines.append(Terminal.shown(line))
        }
        return lines
    }

    /// An export's file, or a set's files (each image with its requested and actual time).
    private static func resultLines(_ result: JSONValue, job: Job) -> [String] {
        let output = result["output"]?.stringValue ?? job.displayOutput
        guard let files = result["files"]?.arrayValue else {
            let bytes = result["bytes"]?.doubleValue.map { Terminal.bytes(Int64($0)) } ?? "?"
            let duration = result["duration"]?.doubleValue.map { String(format: "%.3f s", $0) } ?? "?"
            return ["  result    \(output): \(duration), \(bytes)"]
        }
        let total = files.compactMap { $0["bytes"]?.doubleValue }.reduce(0, +)
        var lines = ["  result    \(output): \(files.count) file(s), \(Terminal.bytes(Int64(total)))"]
        var times: [String: String] = [:]
        for image in result["images"]?.arrayValue ?? [] {
            guard let name = image["name"]?.stringValue, let requested = image["requestedTime"]?.doubleValue,
                let actual = image["actualTime"]?.doubleValue
            else { continue }
            times[name] = ", requested \(Terminal.seconds(requested)), frame at \(Terminal.seconds(actual))"
        }
        for file in files {
            let name = file["name"]?.stringValue ?? "?"
            let bytes = file["bytes"]?.doubleValue.map { Terminal.bytes(Int64($0)) } ?? "?"
            lines.append("  file      \(file["location"]?.stringValue ?? name): \(bytes)\(times[name] ?? "")")
        }
        if let waveform = result["waveform"], let length = waveform["length"]?.doubleValue,
            let spp = waveform["samplesPerPixel"]?.doubleValue, let rate = waveform["sampleRate"]?.doubleValue
        {
            lines.append("  waveform  \(Int(length)) points of \(Int(spp)) samples at \(Int(rate)) Hz")
        }
        return lines
    }

    static func printJSON<T: Encodable>(_ value: T) throws {
        let data = try Job.makeJSONEncoder().encode(value)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// Parses a job id argument.
func jobID(_ text: String) throws -> JobID {
    let id = JobID(text)
    guard id.isWellFormed else {
        throw CommandFailure.usage("'\(text)' is not a job id (ids look like 0193f1c2-7a4e-7d3b-9c1e-5b6a7c8d9e0f)")
    }
    return id
}

/// One child of a graph's parent as `show` lists it.
struct ChildSummary: Encodable {
    var index: Int
    var id: JobID
    var kind: String
    var status: JobStatus
    var progress: Double
    var range: Job.Range?
    var worker: String?
    /// Video frames written per second of the child's run (`nil` before it starts or without
    /// video).
    var fps: Double?

    init(_ job: Job) {
        index = job.childIndex ?? 0
        id = job.id
        kind = job.kind.rawValue
        status = job.status
        progress = job.progress
        range = job.range
        worker = job.worker
        fps = job.videoFramesPerSecond()
    }
}
