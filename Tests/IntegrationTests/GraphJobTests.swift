import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// Job graphs run by real worker processes (issue 27): one upload with several outputs
/// (`--also`), each a child job, one webhook for all; the parent's join made from the
/// children's results.
@Suite("Job graphs in workers", .serialized, .timeLimit(.minutes(6)))
struct GraphJobTests {
    typealias Setup = RemoteMediaTests.Setup
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    @Test func oneUploadSeveralOutputsOneWebhook() async throws {
        let setup = try await Setup("graph-also")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        let input = try await Fixtures.shared.path(.basic)
        let output = setup.directory.file("out/talk.low.mp4")
        try FileManager.default.createDirectory(atPath: setup.directory.file("out"), withIntermediateDirectories: true)
        let id = try await setup.submit(
            input,
            ["--also", "thumbnails", "--also", "waveform", "-o", output, "--webhook", receiver.url()]
        )
        let worker = try JobctlProcess(
            [
                "worker", "--db", setup.db, "--once", "--concurrency", "2", "--allow-private-webhooks",
                "--webhook-retry-scale", "0.01",
            ],
            log: setup.directory.file("worker.log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret]
        )
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")

        let parent = try await setup.job(id)
        #expect(parent.status == .completed, "\(parent.error?.message ?? "")")
        #expect(parent.children?.total == 3 && parent.children?.completed == 3)
        let children = try await setup.store.jobs(JobQuery(parent: id, limit: 10))
            .sorted { ($0.childIndex ?? 0) < ($1.childIndex ?? 0) }
        #expect(children.map(\.kind.rawValue) == ["export", "thumbnails", "waveform"])
        #expect(children.allSatisfy { $0.status == .completed && $0.webhook == nil && $0.parent == id })
        // Each output where it was asked for, checked by ffprobe and by its files.
        let probe = try await FFProbe.probe(output)
        #expect(probe.video?.codec_name == "h264" && probe.audio.first?.codec_name == "aac")
        #expect(setup.directoryContents(setup.directory.file("out/talk.low.thumbnails")).count >= 1)
        #expect(setup.directoryContents(setup.directory.file("out/talk.low.waveform")) == ["peaks.json"])
        // The parent's result is its export's, with every output under `outputs`.
        #expect(parent.result?["output"]?.stringValue == output)
        let outputs = try #require(parent.result?["outputs"]?.arrayValue)
        #expect(outputs.compactMap { $0["kind"]?.stringValue } == ["export", "thumbnails", "waveform"])
        #expect(outputs.allSatisfy { $0["result"] != nil && $0["result"] != .null })

        // Exactly one webhook, the parent's, with every result.
        #expect(try await setup.settledDeliveries().map(\.jobID) == [id])
        let records = receiver.records()
        #expect(records.count == 1, "\(records.map { $0["jobId"] ?? "" })")
        let record = try #require(records.first)
        #expect(record["jobId"] as? String == id.rawValue && record["valid"] as? Bool == true)
        let body = try #require(record["body"] as? String)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let result = try #require((payload["data"] as? [String: Any])?["result"] as? [String: Any])
        #expect((result["outputs"] as? [Any])?.count == 3)

        // `list` shows the job, not its children; `list --parent` shows them.
        let list = try await Jobctl.run(["list", "--db", setup.db])
        #expect(list.stdoutText.split(separator: "\n").count == 1, "\(list.stdoutText)")
        let listed = try await Jobctl.run(["list", "--db", setup.db, "--parent", id.rawValue])
        #expect(listed.stdoutText.split(separator: "\n").count == 3, "\(listed.stdoutText)")

        // `show` lists the children.
        let show = try await Jobctl.run(["show", id.rawValue, "--db", setup.db])
        #expect(show.stdoutText.contains("children") && show.stdoutText.contains("thumbnails"), "\(show.stdoutText)")
    }

    /// Cancelled while its export still runs, a job with extra outputs ends at once; the
    /// outputs already made stay, and its result and cancelled webhook list them (issue 42).
    @Test func aCancelledJobListsTheOutputsThatStay() async throws {
        let setup = try await Setup("graph-also-cancel")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: secret)
        defer { receiver.stop() }
        // Slow to encode (temporal noise with `highest`): the export is still running when the
        // thumbnails and the waveform are done.
        let input = try await Fixtures.shared.path(.long)
        let output = setup.directory.file("out/talk.mp4")
        try FileManager.default.createDirectory(atPath: setup.directory.file("out"), withIntermediateDirectories: true)
        let id = try await setup.submit(
            input,
            ["--also", "thumbnails", "--also", "waveform", "-o", output, "--webhook", receiver.url()],
            preset: "highest"
        )
        let worker = try JobctlProcess(
            [
                "worker", "--db", setup.db, "--concurrency", "3", "--allow-private-webhooks", "--webhook-retry-scale",
                "0.01",
            ],
            log: setup.directory.file("worker.log"),
            environment: ["JOBCTL_WEBHOOK_SECRET": secret]
        )
        defer { worker.signal(SIGKILL) }
        func children() async throws -> [Job] {
            try await setup.store.jobs(JobQuery(parent: id, limit: 10)).sorted {
                ($0.childIndex ?? 0) < ($1.childIndex ?? 0)
            }
        }
        let midway = try await eventually(within: .seconds(120)) {
            let all = try await children()
            return all.count == 3 && all[0].status == .reading && all.dropFirst().allSatisfy { $0.status == .completed }
        }
        try #require(midway, "the extra outputs were not done while the export ran: \(worker.log)")
        let cancel = try await Jobctl.run(["cancel", id.rawValue, "--db", setup.db])
        #expect(cancel.status == 0, "\(cancel.stderr)")

        // The cancelled webhook lists what stays, as the result does; the files are there.
        let sent = try await eventually(within: .seconds(30)) {
            receiver.records().contains { $0["jobId"] as? String == id.rawValue }
        }
        try #require(sent, "no webhook: \(worker.log)")
        let record = try #require(receiver.records().first { $0["jobId"] as? String == id.rawValue })
        let body = try #require(record["body"] as? String)
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let data = try #require(payload["data"] as? [String: Any])
        #expect(data["status"] as? String == "cancelled")
        let listed = try #require((data["result"] as? [String: Any])?["outputs"] as? [[String: Any]], "\(data)")
        #expect(listed.compactMap { $0["kind"] as? String } == ["thumbnails", "waveform"])
        let outputs = listed.compactMap { $0["output"] as? String }
        #expect(outputs == [setup.directory.file("out/talk.thumbnails"), setup.directory.file("out/talk.waveform")])
        for directory in outputs { #expect(!setup.directoryContents(directory).isEmpty, "\(directory)") }
        let stopped = try await eventually(within: .seconds(30)) { try await children()[0].status.isTerminal }
        #expect(stopped)
        // The export, asked to stop, was cancelled (or, done just then, completed and is listed too).
        let export = try await children()[0].status
        let job = try await setup.job(id)
        #expect(job.status == .cancelled)
        #expect(job.result?["outputs"]?.arrayValue?.count == (export == .completed ? 3 : 2), "\(job.result ?? .null)")
        #expect(export == .completed || !FileManager.default.fileExists(atPath: output))
    }

    @Test func anExtraOutputIsCheckedAtSubmit() async throws {
        let setup = try await Setup("graph-also-refused")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.basic)
        let unknown = try await Jobctl.run(
            [
                "submit", input, "--db", setup.db, "--preset", "low", "--also", "gif", "-o",
                setup.directory.file("a.mp4"),
            ]
        )
        #expect(unknown.status == 64 && unknown.stderr.contains("--also gif:"), "\(unknown.stderr)")
        let twice = try await Jobctl.run(
            [
                "submit", input, "--db", setup.db, "--preset", "low", "--also", "waveform", "--also", "waveform", "-o",
                setup.directory.file("a.mp4"),
            ]
        )
        #expect(twice.status == 64 && twice.stderr.contains("--also waveform: its output"), "\(twice.stderr)")
        #expect(try await setup.store.jobs(JobQuery(limit: 10)).isEmpty)
    }
}
