import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// `worker --input-root/--output-root` (docs/spec.md §7): `..` and symlinks cannot lead outside.
@Suite("Path confinement", .timeLimit(.minutes(3)))
struct ConfinementTests {
    @Test func pathsOutsideTheRootsFail() async throws {
        let directory = try TemporaryDirectory("confinement")
        defer { directory.remove() }
        let fm = FileManager.default
        let (inputs, outputs, elsewhere) = (directory.file("in"), directory.file("out"), directory.file("elsewhere"))
        for folder in [inputs, outputs, elsewhere] {
            try fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        let fixture = try await Fixtures.shared.path(.basic)
        try fm.copyItem(atPath: fixture, toPath: inputs + "/talk.mp4")
        try fm.copyItem(atPath: fixture, toPath: elsewhere + "/secret.mp4")
        try fm.createSymbolicLink(atPath: inputs + "/link.mp4", withDestinationPath: elsewhere + "/secret.mp4")
        try fm.createSymbolicLink(atPath: outputs + "/escape", withDestinationPath: elsewhere)
        let db = directory.file("jobs.sqlite")
        let store = try SQLiteJobStore(path: db)

        func submit(_ input: String, _ output: String) async throws -> JobID {
            let result = try await Jobctl.run([
                "submit", input, "--db", db, "--preset", "low", "--range", "0+1s", "-o", output,
            ])
            try #require(result.status == 0, "\(result.stderr)")
            return JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let inside = try await submit(inputs + "/talk.mp4", outputs + "/ok.mp4")
        let dotDot = try await submit(inputs + "/../elsewhere/secret.mp4", outputs + "/a.mp4")
        let symlinkedInput = try await submit(inputs + "/link.mp4", outputs + "/b.mp4")
        let dotDotOutput = try await submit(inputs + "/talk.mp4", outputs + "/../elsewhere/c.mp4")
        let symlinkedOutput = try await submit(inputs + "/talk.mp4", outputs + "/escape/d.mp4")

        let worker = try JobctlProcess(
            ["worker", "--db", db, "--once", "--input-root", inputs, "--output-root", outputs],
            log: directory.file("worker.log")
        )
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")

        #expect(try await store.job(inside)?.status == .completed)
        for id in [dotDot, symlinkedInput] {
            let job = try #require(try await store.job(id))
            #expect(
                job.status == .failed && job.error?.code == "input_not_found" && job.error?.retryable == false,
                "\(job.error?.message ?? "")"
            )
        }
        for id in [dotDotOutput, symlinkedOutput] {
            let job = try #require(try await store.job(id))
            #expect(job.status == .failed && job.error?.code == "output_forbidden", "\(job.error?.message ?? "")")
        }
        #expect(try fm.contentsOfDirectory(atPath: elsewhere) == ["secret.mp4"])
        #expect(try fm.contentsOfDirectory(atPath: outputs).sorted() == ["escape", "ok.mp4"])
    }
}
