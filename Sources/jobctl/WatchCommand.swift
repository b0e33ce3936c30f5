import ArgumentParser
import CommandLineSupport
import Foundation
import Queue

struct WatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Follow running jobs: live progress bars on a terminal, a line per change otherwise.",
        discussion: "Runs until interrupted (Ctrl-C)."
    )

    @Option(help: ArgumentHelp("Refresh this often.", valueName: "duration"))
    var interval = DurationArgument(.milliseconds(500))

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var global: GlobalOptions

    func run() async throws {
        _ = global.bootstrapLogging()
        try await reportingFailures {
            try await database.withStore { store in try await watch(store) }
        }
    }

    private func watch(_ store: any JobStore) async throws {
        let live = isatty(STDOUT_FILENO) == 1
        var drawnLines = 0
        var lastSeen: [JobID: (JobStatus, Int)] = [:]
        var startedAt = Date()
        while true {
            let running = try await store.jobs(status: .reading, limit: 100)
            let queued = try await store.jobs(status: .unknown, limit: 1000).count
            if live {
                var screen = drawnLines > 0 ? "\u{1B}[\(drawnLines)F\u{1B}[J" : ""
                let header = "\(running.count) running, \(queued) queued  (\(Job.timestamp(Date())))"
                let lines = [header] + running.map(WatchCommand.bar)
                screen += lines.joined(separator: "\n") + "\n"
                FileHandle.standardOutput.write(Data(screen.utf8))
                drawnLines = lines.count
            } else {
                // Plain lines: a job's status change, or each 10 % of progress.
                let finished = try await store.jobs(status: nil, limit: 50).filter {
                    $0.status.isTerminal && ($0.finishedAt ?? .distantPast) >= startedAt
                }
                for job in running + finished {
                    let step = Int(job.progress * 10)
                    if let seen = lastSeen[job.id], seen == (job.status, step) { continue }
                    lastSeen[job.id] = (job.status, step)
                    print(JobFormatting.line(job))
                }
                startedAt = Date().addingTimeInterval(-interval.duration.seconds * 2)
                fflush(nil)  // piped into another program: each line as it happens
            }
            try await Task.sleep(for: interval.duration)
        }
    }

    /// `0193…  [=========>         ]  45%  talk.mov → talk.low.mp4  worker-a`
    static func bar(_ job: Job) -> String {
        let width = 24
        let filled = Int(job.progress * Double(width))
        let bar =
            String(repeating: "=", count: filled)
            + (filled < width ? ">" + String(repeating: " ", count: width - filled - 1) : "")
        let name = (job.displayInput as NSString).lastPathComponent
        return
            "\(job.id)  [\(bar)] \(String(format: "%3d%%", JobProgress.wholePercent(job.progress)))  \(name) → \((job.displayOutput as NSString).lastPathComponent)  \(job.worker ?? "")"
            + (job.cancelRequested ? "  (cancelling)" : "")
    }
}
