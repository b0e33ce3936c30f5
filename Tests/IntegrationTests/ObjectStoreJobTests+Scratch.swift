import Foundation
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import Testing

/// A split export whose parts wait in an object store (issue 28): workers that share no
/// directory at all, only a bucket.
extension ObjectStoreJobTests {
    static let scratchBucket = "jobctl-scratch"

    @Test("a split export with its scratch on s3://: two workers sharing no directory make the one-process export")
    func splitExportWithScratchInABucket() async throws {
        let setup = try await Setup("s3-scratch")
        defer { setup.directory.remove() }
        let input = try await Fixtures.shared.path(.splitVFR)
        let output = setup.location("out/split.mp4")
        let scratch = "s3://\(Self.scratchBucket)/\(setup.prefix)/tmp/"
        let id = try await setup.submit(input, ["--split", "4s", "--range", "1s+13s", "-o", "\(output)"])
        let workers = try ["A", "B"].map { name in
            try JobctlProcess(
                [
                    "worker", "--db", setup.db, "--name", name, "--once", "--lease", "5s", "--scratch", scratch,
                    "--staging-dir", setup.directory.file("staging-\(name)"),
                ],
                log: setup.directory.file("\(name).log")
            )
        }
        for worker in workers {
            #expect(try await worker.waitForExit(timeout: .seconds(180))?.status == 0, "\(worker.log)")
        }
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let children = try await setup.store.jobs(JobQuery(parent: id, limit: 100))
        #expect(children.count >= 4 && children.allSatisfy { $0.status == .completed })
        // Each part went to the bucket, under the parent's prefix.
        for child in children {
            let shown = child.result?["output"]?.stringValue ?? ""
            #expect(shown.hasPrefix("\(scratch)\(id).split/"), "\(shown)")
        }

        // The joined object is the one-process export, frame for frame and sample for sample.
        let local = try await setup.download(output, to: "split.mp4")
        try await SplitJobTests.expectOneProcessExport(local, of: input, range: "1s+13s", in: setup.directory)

        // Published, the parts are gone: from the bucket and from both staging directories.
        let client = setup.client
        let left = try await onThread { try client.listObjects(bucket: Self.scratchBucket, prefix: setup.prefix) }
        #expect(left.isEmpty, "\(left.map(\.key))")
        for name in ["A", "B"] {
            let staged = (try? FileManager.default.contentsOfDirectory(atPath: setup.directory.file("staging-\(name)")))
            #expect((staged ?? []).isEmpty, "\(name): \(staged ?? [])")
        }
        let uploads = try await onThread {
            try client.listMultipartUploads(bucket: Self.scratchBucket, prefix: setup.prefix)
        }
        #expect(uploads.isEmpty)
    }

    @Test("--scratch checks an s3:// prefix before the worker starts")
    func scratchPrefixIsChecked() async throws {
        for (scratch, reason) in [("s3://Bad_Bucket/tmp/", "lowercase"), ("s3://jobctl-scratch/{name}", "prefix")] {
            let result = try await Jobctl.run([
                "worker", "--db", "/nonexistent/jobs.sqlite", "--once", "--scratch", scratch,
            ])
            #expect(result.status != 0 && result.stderr.contains(reason), "\(scratch): \(result.stderr)")
        }
    }

    @Test(
        "a part the bucket lost before the join (a lifecycle rule, a hand) is encoded again by the join",
        .serialized,
        arguments: ["segment-00001.mp4", "audio.m4a"]
    )
    func lostScratchPartIsEncodedAgain(part: String) async throws {
        let setup = try await Setup("s3-scratch-lost")
        defer { setup.directory.remove() }
        let input = try await Fixtures.shared.path(.splitVFR)
        let output = setup.directory.file("split.mp4")
        let scratch = "s3://\(Self.scratchBucket)/\(setup.prefix)/tmp/"
        let id = try await setup.submit(input, ["--split", "4s", "--range", "1s+13s", "-o", output])
        let worker = try JobctlProcess(
            [
                "worker", "--db", setup.db, "--name", "W", "--once", "--lease", "30s", "--scratch", scratch,
                "--staging-dir", setup.directory.file("staging"),
            ],
            log: setup.directory.file("W.log"),
            environment: ["JOBCTL_FAILPOINTS": "before-join"]
        )
        try #require(
            try await eventually(within: .seconds(120)) { FencingTests.isStopped(worker.pid) },
            "the worker never reached the join: \(worker.log)"
        )
        let lost = try S3Location.parse("\(scratch)\(id).split/\(part)").get()
        let client = setup.client
        #expect(try await onThread { try client.head(lost) } != nil, "no such part to lose")
        try await onThread { try client.deleteObject(lost) }
        kill(worker.pid, SIGCONT)
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let segments = job.result?["segments"]?.arrayValue ?? []
        let remade = part == "audio.m4a" ? nil : 1
        #expect(segments.count >= 3 && segments[1]["reencoded"]?.doubleValue == remade.map(Double.init), "\(segments)")
        #expect(segments.enumerated().allSatisfy { $0.offset == remade || $0.element["reencoded"] == nil })
        try await SplitJobTests.expectOneProcessExport(output, of: input, range: "1s+13s", in: setup.directory)
        let left = try await onThread { try client.listObjects(bucket: Self.scratchBucket, prefix: setup.prefix) }
        #expect(left.isEmpty, "\(left.map(\.key))")
    }
}
