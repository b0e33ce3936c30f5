import Foundation
import JobKinds
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
                job.status == .failed && job.error?.code == .inputNotFound && job.error?.retryable == false,
                "\(job.error?.message ?? "")"
            )
        }
        for id in [dotDotOutput, symlinkedOutput] {
            let job = try #require(try await store.job(id))
            #expect(job.status == .failed && job.error?.code == .outputForbidden, "\(job.error?.message ?? "")")
        }
        #expect(try fm.contentsOfDirectory(atPath: elsewhere) == ["secret.mp4"])
        #expect(try fm.contentsOfDirectory(atPath: outputs).sorted() == ["escape", "ok.mp4"])
    }

    /// Two API keys (tenants) whose jobs share the roots, as `serve` and the compose file set
    /// them up: each key's paths are relative to its own directory, and whatever B's rows and
    /// B's directory hold (another tenant's name, an absolute path, `..`, symbolic links into
    /// A's directories), B's jobs neither read nor replace A's files. Real worker processes.
    @Test func tenantsSharingARootReachOnlyTheirOwnFiles() async throws {
        let directory = try TemporaryDirectory("tenants")
        defer { directory.remove() }
        let fm = FileManager.default
        let (inputs, outputs) = (directory.file("in"), directory.file("out"))
        let (a, b) = ("aaaaaaaaaaaa", "bbbbbbbbbbbb")
        for folder in [inputs + "/" + a, inputs + "/" + b, outputs] {
            try fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        try fm.copyItem(atPath: try await Fixtures.shared.path(.basic), toPath: inputs + "/\(a)/talk.mp4")
        let db = directory.file("jobs.sqlite")
        let store = try SQLiteJobStore(path: db)
        let low = try #require(
            try JSONSerialization.jsonObject(with: try await Jobctl.run(["presets", "--json"]).stdout) as? [Any]
        )
        let preset = try JSONDecoder().decode(
            JSONValue.self,
            from: JSONSerialization.data(
                withJSONObject: low.first { ($0 as? [String: Any])?["name"] as? String == "low" }!
            )
        )
        func submit(_ owner: String, _ kind: JobKind, _ input: String, _ output: String) async throws -> JobID {
            let settings: JSONValue =
                kind == .export
                ? preset : .object(["times": .array([]), "format": .string("jpg"), "count": .number(2)])
            return try await store.submit(
                JobRequest(
                    kind: kind,
                    input: input,
                    output: output,
                    preset: kind == .export ? "low" : kind.rawValue,
                    presetSettings: settings,
                    range: Job.Range(start: 0, duration: 1),
                    maxAttempts: 1,
                    owner: owner
                )
            ).job.id
        }
        func run() async throws {
            let worker = try JobctlProcess(
                ["worker", "--db", db, "--once", "--input-root", inputs, "--output-root", outputs],
                log: directory.file("worker.log")
            )
            #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")
        }
        let export = try await submit(a, .export, "talk.mp4", "a.mp4")
        let thumbs = try await submit(a, .thumbnails, "talk.mp4", "thumbs")
        try await run()
        for id in [export, thumbs] {
            let job = try #require(try await store.job(id))
            #expect(job.status == .completed, "\(job.error?.description ?? "")")
        }
        let exported = try #require(try await store.job(export))
        #expect(exported.result?["output"]?.stringValue == "a.mp4", "the result shows the key's path, not the host's")
        #expect(try await FFProbe.decodeErrors(outputs + "/\(a)/a.mp4") == "")
        let before = try fm.contentsOfDirectory(atPath: outputs + "/\(a)/thumbs").sorted()
        let exportBytes = try Data(contentsOf: URL(fileURLWithPath: outputs + "/\(a)/a.mp4"))

        // B, by every name and link it could use.
        try fm.createSymbolicLink(atPath: inputs + "/\(b)/steal.mp4", withDestinationPath: inputs + "/\(a)/talk.mp4")
        try fm.createDirectory(atPath: outputs + "/" + b, withIntermediateDirectories: true)
        try fm.createSymbolicLink(atPath: outputs + "/\(b)/a.mp4", withDestinationPath: outputs + "/\(a)/a.mp4")
        try fm.createSymbolicLink(atPath: outputs + "/\(b)/thumbs", withDestinationPath: outputs + "/\(a)/thumbs")
        try fm.createSymbolicLink(atPath: outputs + "/\(b)/into-a", withDestinationPath: outputs + "/" + a)
        try fm.copyItem(atPath: try await Fixtures.shared.path(.basic), toPath: inputs + "/\(b)/mine.mp4")
        let attempts: [(JobID, String)] = [
            (try await submit(b, .export, "talk.mp4", "x.mp4"), "input_not_found"),
            (try await submit(b, .export, inputs + "/\(a)/talk.mp4", "y.mp4"), "input_not_found"),
            (try await submit(b, .export, "../\(a)/talk.mp4", "z.mp4"), "input_not_found"),
            (try await submit(b, .export, "steal.mp4", "w.mp4"), "input_not_found"),
            (try await submit(b, .export, "mine.mp4", "a.mp4"), "output_forbidden"),
            (try await submit(b, .export, "mine.mp4", "../\(a)/a.mp4"), "output_forbidden"),
            (try await submit(b, .export, "mine.mp4", outputs + "/\(a)/a.mp4"), "output_forbidden"),
            (try await submit(b, .export, "mine.mp4", "into-a/a.mp4"), "output_forbidden"),
            (try await submit(b, .thumbnails, "mine.mp4", "thumbs"), "output_forbidden"),
            (try await submit(b, .thumbnails, "mine.mp4", "into-a/thumbs"), "output_forbidden"),
        ]
        let own = try await submit(b, .export, "mine.mp4", "own.mp4")
        try await run()
        for (id, code) in attempts {
            let job = try #require(try await store.job(id))
            #expect(
                job.status == .failed && job.error?.code.rawValue == code,
                "\(job.input) → \(job.output): \(job.error?.description ?? "")"
            )
            #expect(job.error?.message.contains(outputs + "/\(b)") != true, "\(job.error?.message ?? "")")
        }
        #expect(try await store.job(own)?.status == .completed)
        #expect(fm.fileExists(atPath: outputs + "/\(b)/own.mp4"))
        #expect(
            try fm.contentsOfDirectory(atPath: outputs + "/\(a)/thumbs").sorted() == before,
            "A's thumbnails changed"
        )
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: outputs + "/\(a)/a.mp4")) == exportBytes,
            "A's export changed"
        )
        #expect(try fm.contentsOfDirectory(atPath: outputs + "/" + a).sorted() == ["a.mp4", "thumbs"])

        // A worker without the roots cannot place a key's relative paths: a clear failure.
        let lost = try await submit(a, .export, "talk.mp4", "again.mp4")
        let rootless = try JobctlProcess(["worker", "--db", db, "--once"], log: directory.file("rootless.log"))
        #expect(try await rootless.waitForExit(timeout: .seconds(60))?.status == 0)
        let failed = try #require(try await store.job(lost))
        #expect(
            failed.status == .failed && failed.error?.message.contains("--input-root") == true,
            "\(failed.error?.description ?? "")"
        )
    }
}
