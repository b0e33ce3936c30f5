import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// Where a split export writes, and what it says (issue 42, items 11 and 13): its output is
/// checked before anything is encoded, as a one-piece export's is; a trailing `/` hides no file
/// from submit; an API key's job shows no host path; a refused split names its reason.
extension SplitJobTests {
    enum OutputProblem: String, CaseIterable, CustomStringConvertible, Sendable {
        case missingDirectory
        case fileWhereTheDirectoryShouldBe
        var description: String { rawValue }
        var code: String { self == .missingDirectory ? "output_unwritable" : "output_forbidden" }
    }

    @Test(
        "a split export whose output cannot be written fails before any part is encoded",
        .serialized,
        arguments: OutputProblem.allCases
    )
    func aSplitExportChecksItsOutputFirst(problem: OutputProblem) async throws {
        let setup = try await Setup("split-output")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.splitCFR)
        let directory = setup.directory.file("out")
        let id = try await setup.submit(
            input,
            ["--split", "4s", "--max-attempts", "1", "-o", directory + "/split.mp4"]
        )
        // After submit (which sees nothing wrong yet): the directory is missing, or a file is there.
        if problem == .fileWhereTheDirectoryShouldBe {
            try #require(FileManager.default.createFile(atPath: directory, contents: Data("notes".utf8)))
        }
        let worker = try Self.worker(setup, "A", secret: secret)
        #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .failed && job.error?.code.rawValue == problem.code, "\(job.error.map { "\($0)" } ?? "")")
        #expect(job.error?.message.contains(directory) == true, "\(job.error?.message ?? "")")
        #expect(try await Self.children(setup, of: id).isEmpty, "nothing encoded for an output that cannot be written")

        // `jobctl export --split` the same, and its scratch beside the output makes no directory.
        let local = try await Jobctl.run([
            "export", input, "--preset", "low", "--split", "4s", "-o", directory + "/local.mp4",
        ])
        #expect(local.status != 0 && local.stderr.hasPrefix("error: \(problem.code): "), "\(local.stderr)")
        #expect(problem != .missingDirectory || !FileManager.default.fileExists(atPath: directory))
    }

    @Test("a trailing / hides no file from submit's checks of an output")
    func aTrailingSlashHidesNoFile() async throws {
        let setup = try await Setup("split-output-slash")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.basic)
        let file = setup.directory.file("f2.mp4")
        try #require(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let refused: [[String]] = [
            ["--kind", "thumbnails", "-o", file + "/"],  // a set of files into a file
            ["--kind", "waveform", "-o", file + "/"],
            ["--preset", "low", "-o", file + "/x.mp4"],  // an export under a file
            ["--preset", "low", "-o", setup.directory.file("new.mp4") + "/"],  // an export named as a directory
        ]
        for arguments in refused {
            let result = try await Jobctl.run(["submit", input, "--db", setup.db] + arguments)
            #expect(
                result.status != 0 && result.stderr.hasPrefix("error: output_forbidden: "),
                "\(arguments): \(result.status) \(result.stderr)"
            )
        }
        #expect(try await setup.store.jobs(JobQuery(limit: 10)).isEmpty)
    }

    @Test("an API key's split export shows no host path: not in its parts' results, not in errors")
    func aTenantsSplitExportShowsNoHostPath() async throws {
        let setup = try await Setup("split-tenant-paths")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let tenant = try await Tenant(setup, owner: "k7tenant02")
        let done = try await tenant.submitSplit(output: "talk.low.mp4", range: "0s+8s", maxAttempts: 1)
        // A file where this job's scratch directory goes: its parts cannot be written.
        let blocked = try await tenant.submitSplit(output: "blocked.mp4", range: "0s+8s", maxAttempts: 1)
        try FileManager.default.createDirectory(
            atPath: setup.directory.file("scratch"),
            withIntermediateDirectories: true
        )
        try #require(
            FileManager.default.createFile(atPath: setup.directory.file("scratch/\(blocked).split"), contents: nil)
        )
        let worker = try tenant.worker()
        #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")
        let host = setup.directory.path
        #expect(try await setup.job(done).status == .completed)
        for child in try await Self.children(setup, of: done) {
            let shown = child.result?["output"]?.stringValue ?? ""
            #expect(!shown.contains(host) && shown == child.output, "a part shown as \(shown)")
        }
        let failed = try await setup.job(blocked)
        #expect(failed.status == .failed)
        let messages = [failed.error?.message] + (try await Self.children(setup, of: blocked)).map { $0.error?.message }
        for message in messages.compactMap({ $0 }) {
            #expect(!message.contains(host), "\(message)")
        }
        #expect(failed.error?.message.contains("\(blocked).split") == true, "\(failed.error?.message ?? "")")
    }

    @Test("a split refused for a preset that keeps no video says so")
    func aRefusedSplitNamesItsReason() async throws {
        let setup = try await Setup("split-refused")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let input = try await Fixtures.shared.path(.splitCFR)
        let inProcess = try await Jobctl.run([
            "export", input, "--preset", "m4a", "--split", "4s", "-o", setup.directory.file("sound.m4a"),
        ])
        let submitted = try await Jobctl.run([
            "submit", input, "--db", setup.db, "--preset", "m4a", "--split", "4s", "-o", setup.directory.file("s.m4a"),
        ])
        for result in [inProcess, submitted] {
            #expect(result.status != 0, "\(result.stderr)")
            #expect(
                result.stderr.contains("keeps no video") && !result.stderr.contains("copies"),
                "\(result.stderr)"
            )
        }
    }
}
