import Foundation
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import Testing

/// `s3://` for API keys (issue 28): each key gets `ROOT/KEYID/` under the operator's
/// `--s3-root`, checked by `jobctl serve` at submit and by the worker before it reads or writes.
extension ObjectStoreJobTests {
    @Test(
        "an API key's job reads and writes its own prefix of --s3-root; another's is refused by the API and the worker"
    )
    func apiKeysGetTheirOwnPrefix() async throws {
        let setup = try await Setup("s3-tenant")
        defer { setup.directory.remove() }
        let root = "s3://\(Self.bucket)/\(setup.prefix)/tenants/"
        let server = try await APILiveTests.Server(setup.directory, db: setup.db, extra: ["--s3-root", root])
        defer { server.process.signal(SIGKILL) }
        let own = "\(root)\(server.keyID)/"
        let client = setup.client
        let input = try await Self.uploadOwnInput(client, own)

        // The API: its own prefix is accepted, another key's refused with where its own is.
        let id = try await Self.submitOwnExport(server, input: input, output: "\(own)out/talk.mp4")
        let other = "\(root)someoneelse/out.mp4"
        let refused = try await server.request(
            "POST",
            "/v1/jobs",
            body: #"{"input":"\#(input)","output":"\#(other)","preset":"low"}"#
        )
        let error = refused.json["error"] as? [String: Any]
        #expect(refused.status == 422 && (error?["message"] as? String)?.contains(own) == true, "\(refused.json)")

        // A row changed around the API (another server's root, a hand edit): the worker refuses it.
        let second = try await server.request(
            "POST",
            "/v1/jobs",
            body: #"{"input":"\#(input)","output":"\#(own)out/second.mp4","preset":"low","range":"0+1s"}"#
        )
        let sneaked = try #require(second.json["id"] as? String, "\(second.json)")
        try await ProcessRunner.check(
            "sqlite3",
            ["-cmd", ".timeout 10000", setup.db, "UPDATE jobs SET output = '\(other)' WHERE id = '\(sneaked)'"]
        )
        let worker = try JobctlProcess(
            ["worker", "--db", setup.db, "--name", "w", "--once", "--s3-root", root] + server.roots,
            log: setup.directory.file("worker.log")
        )
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")
        let job = try await setup.job(JobID(id))
        #expect(job.status == .completed, "\(job.error?.message ?? "") \(worker.log)")
        #expect(try await onThread { try client.head(S3Location.parse(own + "out/talk.mp4").get()) } != nil)
        let stopped = try await setup.job(JobID(sneaked))
        #expect(
            stopped.status == .failed && stopped.error?.code == .outputForbidden,
            "\(stopped.error?.code.rawValue ?? ""): \(stopped.error?.message ?? "")"
        )
        #expect(stopped.error?.message.contains(own) == true, "\(stopped.error?.message ?? "")")
        #expect(try await onThread { try client.head(S3Location.parse(other).get()) } == nil)
    }
}

extension ObjectStoreJobTests {
    /// The basic fixture at `OWN/in/talk.mp4`, the key's own prefix.
    static func uploadOwnInput(_ client: S3Client, _ own: String) async throws -> S3Location {
        let input = try S3Location.parse(own + "in/talk.mp4").get()
        let path = try await Fixtures.shared.path(.basic)
        _ = try await onThread { try client.putObject(file: path, to: input, contentType: "video/mp4") }
        return input
    }

    /// Submits a 1 s export of `input` to `output` over the API (201); its id.
    static func submitOwnExport(_ server: APILiveTests.Server, input: S3Location, output: String) async throws -> String
    {
        let submitted = try await server.request(
            "POST",
            "/v1/jobs",
            body: #"{"input":"\#(input)","output":"\#(output)","preset":"low","range":"0+1s"}"#
        )
        #expect(submitted.status == 201, "\(submitted.json)")
        return try #require(submitted.json["id"] as? String, "\(submitted.json)")
    }
}
