import Foundation
import MediaTestKit
import Testing

/// Whether this machine lets a process mount a tmpfs of its own (as root, or in a user
/// namespace); containers often do not. The suite shows as skipped where it cannot.
enum PrivateMounts {
    static let work: Bool = {
        let arguments = (getuid() == 0 ? ["-m"] : ["-rm"]) + ["sh", "-c", "mount -t tmpfs -o size=64k tmpfs /tmp"]
        guard let child = try? ChildProcess("unshare", arguments) else { return false }
        while child.exit == nil { usleep(10_000) }
        return child.exit?.status == 0
    }()
}

/// A full disk at any stage of writing (the header, the media, the trailer) is
/// `output_unwritable`, retryable, and leaves nothing behind: a tmpfs of 256 KB filled to
/// within a few KB, in a private mount namespace.
@Suite(
    "A full disk",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: PrivateMounts.work, "needs a private tmpfs mount (root, or user namespaces)")
)
struct FullDiskTests {
    /// Runs `command` with a 256 KB tmpfs mounted at `mountPoint`, all but `freeKB` of it
    /// filled; `nil` when the mount failed.
    static func onTinyDisk(freeKB: Int, at mountPoint: String, _ command: [String]) async throws -> ProcessResult? {
        let script = #"""
            mount -t tmpfs -o size=256k tmpfs "$1" || exit 97
            dd if=/dev/zero of="$1/fill" bs=4k count="$2" 2>/dev/null
            shift 2
            exec "$@"
            """#
        let namespace = getuid() == 0 ? ["-m"] : ["-rm"]
        let result = try await ProcessRunner.run(
            "unshare",
            namespace + ["sh", "-c", script, "sh", mountPoint, "\((256 - freeKB) / 4)"] + command
        )
        return result.status == 97 || result.stderr.contains("unshare failed") ? nil : result
    }

    @Test(arguments: [0, 4, 16, 48])
    func exportOnAFullDiskIsOutputUnwritable(freeKB: Int) async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("full-disk") { directory in
            let disk = directory.file("disk")
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            let script = [Jobctl.path, "export", input, "--preset", "low", "-o", disk + "/out.mp4"]
            let result = try #require(
                try await Self.onTinyDisk(freeKB: freeKB, at: disk, script),
                "the private mount failed"
            )
            #expect(result.status == 1, "\(freeKB) KB free: \(result.stderr)")
            #expect(
                result.stderr.hasPrefix(
                    "error: output_unwritable: \(disk)/out.mp4 cannot be written: no space left on the device"
                ),
                "\(result.stderr)"
            )
        }
    }

    /// Nothing is left on the disk: checked inside the namespace, where the tmpfs is.
    @Test func aFailedExportLeavesOnlyWhatWasThere() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("full-disk-left") { directory in
            let disk = directory.file("disk")
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            let command = [
                "sh", "-c", "\"$0\" export \"$1\" --preset low -o \"$2/out.mp4\"; echo \"exit $?\"; ls -A \"$2\"",
                Jobctl.path, input, disk,
            ]
            let result = try #require(
                try await Self.onTinyDisk(freeKB: 16, at: disk, command),
                "the private mount failed"
            )
            #expect(result.stdoutText == "exit 1\nfill\n", "\(result.stdoutText) \(result.stderr)")
        }
    }

    /// In the queue the same failure is retried with backoff, then fails for good.
    @Test func aJobOnAFullDiskIsRetried() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("full-disk-job") { directory in
            let disk = directory.file("disk")
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            let db = directory.file("jobs.sqlite")
            let submit = try await Jobctl.run([
                "submit", input, "--db", db, "--preset", "low", "--max-attempts", "2", "-o", disk + "/out.mp4",
            ])
            try #require(submit.status == 0, "\(submit.stderr)")
            let id = submit.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            // --once exits when the retry is not due yet: run it until the job ends.
            let worker = [
                "sh", "-c",
                "for i in 1 2 3 4 5 6 7 8 9 10; do \"$0\" worker --db \"$1\" --once --retry-delay 100ms 2>/dev/null; sleep 0.3; done",
                Jobctl.path, db,
            ]
            try #require(try await Self.onTinyDisk(freeKB: 8, at: disk, worker) != nil, "the private mount failed")
            let show = try await Jobctl.run(["show", id, "--db", db, "--json"])
            let job = try #require(try Jobctl.json(show) as? [String: Any])
            let error = try #require(job["error"] as? [String: Any], "\(show.stdoutText)")
            #expect(job["status"] as? String == "failed" && job["attempt"] as? Int == 2, "\(show.stdoutText)")
            #expect(error["code"] as? String == "output_unwritable" && error["retryable"] as? Bool == true, "\(error)")
        }
    }
}
