import Foundation
import JobKinds
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import QueueSQLite
import Testing

/// `s3://` inputs and outputs of real worker processes against a real object store (SeaweedFS on
/// loopback, scripts/test-s3.sh, started by `make test`): what arrives is checked with curl's
/// own SigV4 and ffprobe.
@Suite("Object store jobs", .serialized, .timeLimit(.minutes(5)))
struct ObjectStoreJobTests {
    static let bucket = "jobctl-test"

    struct Setup: Sendable {
        let directory: TemporaryDirectory
        let store: SQLiteJobStore
        let client: S3Client
        let environment: [String: String]
        /// A prefix of this test's own.
        let prefix: String
        var db: String { directory.file("jobs.sqlite") }

        init(_ label: String) async throws {
            let environment = ProcessInfo.processInfo.environment
            guard environment["JOBCTL_TEST_S3"] != nil else {
                throw HelperServerError(
                    script: "scripts/test-s3.sh",
                    line: "no object store: run the tests through make test"
                )
            }
            self.environment = environment
            directory = try TemporaryDirectory(label)
            store = try SQLiteJobStore(path: directory.file("jobs.sqlite"))
            client = try S3Client.fromEnvironment(environment, home: "/nonexistent")
            prefix = "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
        }

        func location(_ key: String) -> S3Location {
            S3Location(bucket: ObjectStoreJobTests.bucket, key: "\(prefix)/\(key)")
        }

        /// The basic fixture as `s3://…/PREFIX/talk.mp4`.
        func uploadInput() async throws -> String {
            let path = try await Fixtures.shared.path(.basic)
            let location = location("talk.mp4")
            let client = self.client
            _ = try await onThread { try client.putObject(file: path, to: location, contentType: "video/mp4") }
            return "\(location)"
        }

        func submit(_ input: String, _ arguments: [String]) async throws -> JobID {
            let result = try await Jobctl.run(["submit", input, "--db", db, "--preset", "low"] + arguments)
            try #require(result.status == 0, "submit failed: \(result.stderr)")
            return JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        func runWorker(
            _ environment: [String: String] = [:],
            name: String = "worker",
            arguments: [String] = []
        ) async throws -> String {
            let worker = try JobctlProcess(
                ["worker", "--db", db, "--once", "--staging-dir", directory.file("staging"), "--retry-delay", "100ms"]
                    + arguments,
                log: directory.file("\(name).log"),
                environment: environment
            )
            let exit = try await worker.waitForExit(timeout: .seconds(120))
            #expect(exit?.status == 0, "\(worker.log)")
            return worker.log
        }

        func job(_ id: JobID) async throws -> Job { try #require(try await store.job(id)) }

        /// The object's bytes fetched by curl with its own signature, into `name`.
        func download(_ location: S3Location, to name: String) async throws -> String {
            let path = directory.file(name)
            let result = try await ProcessRunner.run(
                "curl",
                [
                    "-s", "-f", "-o", path, "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                    "\(environment["AWS_ACCESS_KEY_ID"]!):\(environment["AWS_SECRET_ACCESS_KEY"]!)",
                    "\(environment["JOBCTL_TEST_S3"]!)/\(location.bucket)/\(SigV4.encode(location.key, keepingSlashes: true))",
                ]
            )
            try #require(result.status == 0, "curl could not fetch \(location): \(result.stderr)")
            return path
        }

        func multipartUploads() async throws -> [MultipartUploadInfo] {
            let (client, prefix) = (self.client, self.prefix)
            return try await onThread {
                try client.listMultipartUploads(bucket: ObjectStoreJobTests.bucket, prefix: prefix)
            }
        }
    }

    @Test("an export from a bucket to a bucket: the object is the export, and no secret shows anywhere")
    func bucketToBucket() async throws {
        let setup = try await Setup("s3-export")
        defer { setup.directory.remove() }
        let hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        let receiver = try await Receiver(setup.directory, name: "receiver", secret: hookSecret)
        defer { receiver.stop() }
        let input = try await setup.uploadInput()
        let output = setup.location("out/talk low.mp4")
        let id = try await setup.submit(
            input,
            ["--range", "1s+2s", "-o", "\(output)", "--webhook", receiver.url(), "--allow-private-webhooks"]
        )
        let log = try await setup.runWorker(
            ["JOBCTL_WEBHOOK_SECRET": hookSecret],
            arguments: ["--allow-private-webhooks"]
        )

        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        #expect(job.result?["output"]?.stringValue == "\(output)")
        let info = try #require(try await onThread { try setup.client.head(output) })
        #expect(Double(info.size) == job.result?["bytes"]?.doubleValue)
        #expect(info.metadata["jobctl-job"] == id.rawValue && info.metadata["jobctl-attempt"] == "1")
        let local = try await setup.download(output, to: "out.mp4")
        let probe = try await FFProbe.probe(local)
        #expect(abs((probe.format.duration.flatMap(Double.init) ?? 0) - 2) < 0.1, "\(probe.format)")
        #expect(probe.video != nil && !probe.audio.isEmpty)

        // The secret, a signature or a pre-signed URL: in no log, no job JSON, no webhook.
        let show = try await Jobctl.run(["show", id.rawValue, "--db", setup.db, "--json"])
        let secret = setup.environment["AWS_SECRET_ACCESS_KEY"]!
        let delivered = try await eventually(within: .seconds(10)) { !receiver.records().isEmpty }
        #expect(delivered, "no webhook arrived")
        let webhook = (try? String(contentsOfFile: receiver.log, encoding: .utf8)) ?? ""
        #expect(receiver.records().first?["jobId"] as? String == id.rawValue, "\(webhook)")
        for text in [log, show.stdoutText, webhook] {
            #expect(!text.contains(secret) && !text.contains("X-Amz-Signature") && !text.contains("Authorization"))
        }
        #expect(try await setup.multipartUploads().isEmpty)
    }

    @Test("above the threshold, a multipart upload: the assembled object checked, nothing left over")
    func multipartOutput() async throws {
        let setup = try await Setup("s3-multipart")
        defer { setup.directory.remove() }
        let input = try await setup.uploadInput()
        let output = setup.location("out/multi.mp4")
        let id = try await setup.submit(input, ["-o", "\(output)"])
        // Every output a multipart upload (of one part: S3's parts are 5 MiB at least; the
        // assembly of several is ObjectUploadTests').
        _ = try await setup.runWorker(["JOBCTL_S3_MULTIPART_THRESHOLD": "1"])

        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let info = try #require(try await onThread { try setup.client.head(output) })
        let bytes = Int64(job.result?["bytes"]?.doubleValue ?? 0)
        #expect(info.size == bytes && bytes > 40_000, "\(info.size) bytes")
        // A multipart object's ETag: the MD5 of the parts' MD5s, then the number of parts.
        #expect(info.etag.hasSuffix("-1"), "\(info.etag)")
        let local = try await setup.download(output, to: "multi.mp4")
        #expect(try await FFProbe.decodeErrors(local) == "")
        #expect(try await setup.multipartUploads().isEmpty)
    }

    @Test(
        "a wrong secret fails the job at once with the store's code, writing or reading; a missing input is input_not_found"
    )
    func refusals() async throws {
        let setup = try await Setup("s3-refusals")
        defer { setup.directory.remove() }
        let refused = try await setup.submit(
            try await Fixtures.shared.path(.basic),
            ["-o", "\(setup.location("out/refused.mp4"))"]
        )
        let log = try await setup.runWorker(
            ["AWS_SECRET_ACCESS_KEY": "not-the-secret", "JOBCTL_S3_MULTIPART_THRESHOLD": "1"],
            name: "wrong"
        )
        var job = try await setup.job(refused)
        #expect(job.status == .failed && job.attempt == 1, "\(job.status), attempt \(job.attempt)")
        #expect(job.error?.code == .outputUnwritable, "\(job.error?.code as Any)")
        #expect(job.error?.message.contains("SignatureDoesNotMatch") == true, "\(job.error?.message ?? "")")
        #expect(job.error?.retryable == false)
        #expect(!log.contains("not-the-secret"))
        #expect(try await setup.multipartUploads().isEmpty)

        // Reading with the wrong secret: input_unreadable, with the store's code, not retried.
        let unreadable = try await setup.submit(try await setup.uploadInput(), ["-o", setup.directory.file("u.mp4")])
        _ = try await setup.runWorker(["AWS_SECRET_ACCESS_KEY": "not-the-secret"], name: "unreadable")
        job = try await setup.job(unreadable)
        #expect(job.status == .failed && job.attempt == 1 && job.error?.code == .inputUnreadable, "\(job.status)")
        #expect(job.error?.message.contains("SignatureDoesNotMatch") == true, "\(job.error?.message ?? "")")
        #expect(job.error?.retryable == false)

        let missing = try await setup.submit(
            "\(setup.location("nothing-here.mp4"))",
            ["-o", setup.directory.file("x.mp4")]
        )
        _ = try await setup.runWorker(name: "missing")
        job = try await setup.job(missing)
        #expect(job.status == .failed && job.error?.code == .inputNotFound, "\(job.error?.message ?? "")")
        #expect(job.error?.message.contains("nothing-here.mp4") == true)
    }

    @Test("submit says why an s3:// location is refused: a bucket name, a missing key, a file set without {name}")
    func submitChecks() async throws {
        let setup = try await Setup("s3-submit")
        defer { setup.directory.remove() }
        let input = try await Fixtures.shared.path(.basic)
        for (arguments, expected) in [
            (["--preset", "low", "-o", "s3://Bad_Bucket/x.mp4"], "lowercase"),
            (["--preset", "low", "-o", "s3://jobctl-test"], "no key"),
            (["--kind", "thumbnails", "--at", "1s", "-o", "s3://jobctl-test/thumbs/"], "{name}"),
        ] {
            let result = try await Jobctl.run(["submit", input, "--db", setup.db] + arguments)
            #expect(result.status != 0 && result.stderr.contains(expected), "\(arguments): \(result.stderr)")
        }
    }

    @Test("a worker frozen between its lease check and its write: the new owner's object stands")
    func aStaleWorkerLosesTheConditionalWrite() async throws {
        let setup = try await Setup("s3-stale")
        defer { setup.directory.remove() }
        let output = setup.location("out/stale.mp4")
        let id = try await setup.submit(try await Fixtures.shared.path(.basic), ["--range", "0+1s", "-o", "\(output)"])
        func worker(_ name: String, failpoints: String? = nil, once: Bool) throws -> JobctlProcess {
            try JobctlProcess(
                [
                    "worker", "--db", setup.db, "--name", name, "--lease", "2s", "--staging-dir",
                    setup.directory.file(name),
                ]
                    + (once ? ["--once"] : []),
                log: setup.directory.file("\(name).log"),
                environment: failpoints.map { ["JOBCTL_FAILPOINTS": $0] } ?? [:]
            )
        }
        let a = try worker("A", failpoints: "before-publish", once: true)
        try #require(
            try await eventually(within: .seconds(60)) { FencingTests.isStopped(a.pid) },
            "A never reached its write: \(a.log)"
        )
        // A's lease runs out while it is frozen; B takes the job over and publishes.
        let b = try worker("B", once: false)
        let done = try await eventually(within: .seconds(90)) { try await setup.job(id).status.isTerminal }
        b.signal(SIGTERM)
        _ = try await b.waitForExit(timeout: .seconds(30))
        try #require(done, "B did not finish the job: \(b.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed && job.attempt == 2 && job.worker == "B", "\(job.status) \(job.attempt)")
        #expect(try await onThread { try setup.client.head(output) }?.metadata["jobctl-attempt"] == "2")

        // A wakes up and writes under its old condition: refused, and it does not try again.
        kill(a.pid, SIGCONT)
        #expect(try await a.waitForExit(timeout: .seconds(30))?.status == 0, "\(a.log)")
        let info = try #require(try await onThread { try setup.client.head(output) })
        #expect(info.metadata["jobctl-attempt"] == "2", "A replaced B's object: \(info)")
        #expect(Double(info.size) == job.result?["bytes"]?.doubleValue)
        #expect(try await setup.multipartUploads().isEmpty)
    }

    @Test("a storyboard to an s3:// key template lands whole: its JSON description is the last object written")
    func fileSetToBucket() async throws {
        let setup = try await Setup("s3-storyboard")
        defer { setup.directory.remove() }
        let input = try await setup.uploadInput()
        let template = "s3://\(ObjectStoreJobTests.bucket)/\(setup.prefix)/board/{name}"
        let result = try await Jobctl.run(["submit", input, "--db", setup.db, "--kind", "storyboard", "-o", template])
        try #require(result.status == 0, "submit failed: \(result.stderr)")
        let id = JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        let (client, prefix) = (setup.client, setup.prefix)
        func names() async throws -> Set<String> {
            let objects = try await onThread {
                try client.listObjects(bucket: ObjectStoreJobTests.bucket, prefix: "\(prefix)/board/")
            }
            return Set(objects.map { String($0.key.dropFirst("\(prefix)/board/".count)) })
        }
        // Frozen between two files of the set: a reader waiting for the description sees none.
        let worker = try JobctlProcess(
            ["worker", "--db", setup.db, "--once", "--staging-dir", setup.directory.file("staging")],
            log: setup.directory.file("worker.log"),
            environment: ["JOBCTL_FAILPOINTS": "between-files"]
        )
        try #require(
            try await eventually(within: .seconds(60)) { FencingTests.isStopped(worker.pid) },
            "the worker never reached its second file: \(worker.log)"
        )
        let half = try await names()
        #expect(!half.isEmpty && !half.contains("storyboard.json"), "\(half)")
        kill(worker.pid, SIGCONT)
        #expect(try await worker.waitForExit(timeout: .seconds(60))?.status == 0, "\(worker.log)")
        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        let listed = job.result?["files"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(listed.last == "storyboard.json", "the description is not written last: \(listed)")
        let names = try await names()
        #expect(names.contains("storyboard.json") && names.contains("storyboard.vtt") && names.count >= 3, "\(names)")
        #expect(names == Set(listed), "\(names) against \(listed)")
        let json = try await setup.download(setup.location("board/storyboard.json"), to: "storyboard.json")
        #expect(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) is [String: Any])
    }

    @Test("the in-process commands read s3:// inputs too: probe one, and a missing key is input_not_found")
    func probeAnObject() async throws {
        let setup = try await Setup("s3-probe")
        defer { setup.directory.remove() }
        let input = try await setup.uploadInput()
        let probe = try await Jobctl.run(["probe", input, "--json"])
        #expect(probe.status == 0, "\(probe.stderr)")
        #expect(probe.stdoutText.contains("\"duration\"") && !probe.stdoutText.contains("X-Amz-Signature"))
        let missing = try await Jobctl.run(["probe", "\(setup.location("missing.mp4"))"])
        #expect(missing.status != 0 && missing.stderr.contains("input_not_found"), "\(missing.stderr)")
    }

    @Test("which object store failures are worth another attempt, and which codes they become")
    func errorsAsJobErrors() {
        let cases: [(S3Error.Code, Bool, ErrorCode, Bool)] = [
            (.notFound, true, .inputNotFound, false),
            (.denied, true, .inputUnreadable, false),
            (.transient, true, .inputUnreadable, true),
            (.credentials, true, .inputUnreadable, true),
            (.denied, false, .outputUnwritable, false),
            (.notFound, false, .outputUnwritable, false),
            (.transient, false, .outputUnwritable, true),
            (.preconditionFailed, false, .outputUnwritable, true),
            (.credentials, false, .outputUnwritable, true),
        ]
        for (code, reading, expected, retryable) in cases {
            let error = ObjectStoreMedia.jobError(S3Error(code, "s3://b/k: \(code)"), reading: reading)
            #expect(error.code == expected && error.retryable == retryable, "\(code), reading \(reading): \(error)")
        }
    }
}
