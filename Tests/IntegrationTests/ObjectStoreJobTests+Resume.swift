import Foundation
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import Testing

/// Multipart uploads that outlive their worker (issue 28): continued by the job's next attempt
/// on another worker, or aborted by a worker's sweep when the job ends instead.
extension ObjectStoreJobTests {
    /// Workers upload in 5 MiB parts from 6 MiB on; the test's output is about 21 MiB: 5 parts.
    static let partEnvironment = ["JOBCTL_S3_MULTIPART_THRESHOLD": "\(6 << 20)", "JOBCTL_S3_PART_SIZE": "\(5 << 20)"]

    /// 2 s of noise coded losslessly (21 MiB), exported with `passthrough`: a remux, the same
    /// bytes on every attempt.
    static func largeExport(_ setup: Setup, output: S3Location, attempts: Int = 3) async throws -> (JobID, String) {
        let input = setup.directory.file("noise.mp4")
        let made = try await ProcessRunner.run(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=25:d=2,noise=alls=60:allf=t",
                "-f", "lavfi", "-i", "sine=d=2", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0",
                "-c:a", "aac", "-shortest", input,
            ]
        )
        try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        let submitted = try await Jobctl.run(
            [
                "submit", input, "--db", setup.db, "--preset", "passthrough", "-o", "\(output)",
                "--max-attempts", "\(attempts)",
            ]
        )
        try #require(submitted.status == 0, "submit failed: \(submitted.stderr)")
        return (JobID(submitted.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)), input)
    }

    /// A worker with a 2 s lease that stops itself (SIGSTOP) once its first part is in the
    /// store, then is killed as the OOM killer would: its multipart upload stays behind.
    static func killMidUpload(_ setup: Setup) async throws -> JobctlProcess {
        let a = try JobctlProcess(
            ["worker", "--db", setup.db, "--name", "A", "--lease", "2s", "--staging-dir", setup.directory.file("A")],
            log: setup.directory.file("A.log"),
            environment: partEnvironment.merging(["JOBCTL_FAILPOINTS": "after-part"]) { $1 }
        )
        try #require(
            try await eventually(within: .seconds(60)) { FencingTests.isStopped(a.pid) },
            "A never sent a part: \(a.log)"
        )
        a.signal(SIGKILL)
        _ = try await a.waitForExit(timeout: .seconds(10))
        return a
    }

    @Test("a worker killed mid-multipart: the next one continues the upload, and the object is the export")
    func killedMidMultipartResumes() async throws {
        let setup = try await Setup("s3-resume")
        defer { setup.directory.remove() }
        let output = setup.location("out/noise.mp4")
        let (id, input) = try await Self.largeExport(setup, output: output)
        _ = try await Self.killMidUpload(setup)
        let left = try await setup.multipartUploads()
        #expect(left.count == 1, "\(left)")
        let recorded = UploadJournal.decode(try await setup.store.recordedUpload(of: id))
        #expect(recorded.map(\.uploadID) == left.map(\.uploadID) && recorded.first?.location == "\(output)")
        let held = try await onThread { try setup.client.listParts(output, uploadID: recorded[0].uploadID) }
        #expect(!held.isEmpty && held.count < 5, "\(held.map(\.number))")

        // B takes the job over once A's lease has run out, and sends only what is missing.
        let b = try JobctlProcess(
            ["worker", "--db", setup.db, "--name", "B", "--lease", "10s", "--staging-dir", setup.directory.file("B")],
            log: setup.directory.file("B.log"),
            environment: Self.partEnvironment
        )
        let done = try await eventually(within: .seconds(90)) { try await setup.job(id).status.isTerminal }
        b.signal(SIGTERM)
        _ = try await b.waitForExit(timeout: .seconds(30))
        try #require(done, "B did not finish the job: \(b.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed && job.attempt == 2 && job.worker == "B", "\(job.status): \(b.log)")
        let resumed = try #require(
            b.log.split(separator: "\n").first { $0.contains("Continuing the upload an earlier attempt began") },
            "B started over: \(b.log)"
        )
        // The parts A had sent (the store may list a part A was still sending a moment later).
        let kept = resumed.split(separator: " ").first { $0.hasPrefix("upload.parts.kept=") }.flatMap {
            Int($0.dropFirst("upload.parts.kept=".count))
        }
        #expect(kept.map { $0 >= held.count && $0 < 5 } == true, "\(resumed)")

        // The object is byte for byte what an export of the same input makes.
        let expected = setup.directory.file("expected.mp4")
        let local = try await Jobctl.run(["export", input, "--preset", "passthrough", "-o", expected])
        try #require(local.status == 0, "\(local.stderr)")
        let fetched = try await setup.download(output, to: "fetched.mp4")
        #expect(try FileDigest.of(fetched) == (try FileDigest.of(expected)), "the resumed object differs")
        let info = try #require(try await onThread { try setup.client.head(output) })
        // The metadata is the upload's, given when it began: attempt 1's.
        #expect(info.etag.hasSuffix("-5") && info.metadata["jobctl-job"] == id.rawValue, "\(info)")
        #expect(try await setup.multipartUploads().isEmpty)
        #expect(try await setup.store.recordedUpload(of: id) == nil)
    }

    @Test("a worker killed mid-multipart on the job's last attempt: the next worker's sweep aborts the upload")
    func abandonedUploadIsSwept() async throws {
        let setup = try await Setup("s3-sweep")
        defer { setup.directory.remove() }
        let output = setup.location("out/noise.mp4")
        let (id, _) = try await Self.largeExport(setup, output: output, attempts: 1)
        _ = try await Self.killMidUpload(setup)
        #expect(try await setup.multipartUploads().count == 1)

        // The first worker after the lease ran out ends the job (no attempt left); the next
        // one's sweep finds its upload abandoned. (The killed worker's lease must have run out.)
        let expired = try await eventually(within: .seconds(30)) {
            try await setup.store.leaseExpiry(of: id).map { $0 < Date() } ?? true
        }
        #expect(expired, "the killed worker's lease never ran out")
        _ = try await setup.runWorker(Self.partEnvironment, name: "ends")
        let job = try await setup.job(id)
        #expect(
            job.status == .failed && job.error?.code == .leaseLost,
            "\(job.status) \(job.error?.code.rawValue ?? "")"
        )
        let log = try await setup.runWorker(Self.partEnvironment, name: "sweeps")
        #expect(log.contains("Aborted an upload its ended job left behind"), "\(log)")
        #expect(try await setup.multipartUploads().isEmpty)
        #expect(try await setup.store.recordedUpload(of: id) == nil)
        #expect(try await onThread { try setup.client.head(output) } == nil, "nothing was published")
    }
}
