import Foundation
import JobctlCore
import MediaTestKit
import ObjectStorage
import Queue
import Testing

/// The dashboard shows an output in a bucket as it shows a local one (issue 30): read by the
/// server from the real object store (SeaweedFS), streamed to a signed-in session with byte
/// ranges, to nobody else.
extension ObjectStoreJobTests {
    /// A signed-in dashboard session through curl's cookie jar `jar`.
    struct DashboardSession {
        let base: String
        let jar: String

        init(base: String, jar: String, key: String) async throws {
            self.base = base
            self.jar = jar
            let form = try await Self.curl(["-c", jar, base + "/ui/signin"]).stdoutText
            let range = try #require(
                form.range(of: #"name="csrf" value="[A-Za-z0-9_-]+""#, options: .regularExpression)
            )
            let token = String(form[range].dropFirst(#"name="csrf" value=""#.count).dropLast())
            _ = try await Self.curl(
                ["-b", jar, "-c", jar, "--data-urlencode", "csrf=\(token)", "--data-urlencode", "key=\(key)"]
                    + [base + "/ui/signin"]
            )
        }

        static func curl(_ arguments: [String]) async throws -> ProcessResult {
            try await ProcessRunner.run("curl", ["-sS", "--max-time", "60"] + arguments)
        }

        /// `path` with the session's cookie: the status, and the body written to `file` if given.
        func get(
            _ path: String,
            range: String? = nil,
            to file: String? = nil
        ) async throws -> (status: Int, body: String) {
            var arguments = ["-b", jar, "-w", "\n%{http_code}"]
            if let range { arguments += ["-H", "Range: bytes=\(range)"] }
            if let file { arguments += ["-o", file] }
            let result = try await Self.curl(arguments + [base + path])
            let lines = result.stdoutText.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }
    }

    @Test("a job's output in a bucket plays on its page: served by the server in ranges, to its tenant only")
    func dashboardShowsAnOutputInABucket() async throws {
        let setup = try await Setup("s3-dashboard")
        defer { setup.directory.remove() }
        let root = "s3://\(Self.bucket)/\(setup.prefix)/tenants/"
        let server = try await APILiveTests.Server(setup.directory, db: setup.db, extra: ["--s3-root", root])
        defer { server.process.signal(SIGKILL) }
        let own = "\(root)\(server.keyID)/"
        let client = setup.client
        let input = try await Self.uploadOwnInput(client, own)
        let id = try await Self.submitOwnExport(server, input: input, output: "\(own)out/talk.mp4")
        let worker = try JobctlProcess(
            ["worker", "--db", setup.db, "--name", "w", "--once", "--s3-root", root] + server.roots,
            log: setup.directory.file("worker.log")
        )
        #expect(try await worker.waitForExit(timeout: .seconds(120))?.status == 0, "\(worker.log)")
        let object = try S3Location.parse(own + "out/talk.mp4").get()
        let stored = try #require(try await onThread { try client.head(object) }, "no output in the bucket")

        let session = try await DashboardSession(base: server.base, jar: setup.directory.file("jar"), key: server.key)
        let page = try await session.get("/ui/jobs/\(id)")
        #expect(page.status == 200)
        #expect(
            page.body.contains(
                #"<video class="output" controls preload="metadata" src="../jobs/\#(id)/files/talk.mp4">"#
            )
        )
        #expect(!page.body.contains("X-Amz-"), "no pre-signed URL, no signature")

        // The whole file plays: ffprobe reads what the page would.
        let whole = setup.directory.file("whole.mp4")
        #expect(try await session.get("/ui/jobs/\(id)/files/talk.mp4", to: whole).status == 200)
        #expect(
            Int64((try FileManager.default.attributesOfItem(atPath: whole)[.size] as? NSNumber)?.intValue ?? 0)
                == stored.size
        )
        let probed = try await ProcessRunner.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", whole]
        )
        #expect(abs((Double(probed.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) - 1) < 0.1)

        // Larger than a request to the store takes (4 MiB): 9 MiB of known bytes in its place,
        // whole and a seek's range across two of the server's requests.
        let big = setup.directory.file("big")
        var bytes = Data(count: 9 << 20)
        for index in stride(from: 0, to: bytes.count, by: 4096) {
            bytes[index] = UInt8(truncatingIfNeeded: index / 4096)
        }
        try bytes.write(to: URL(fileURLWithPath: big))
        _ = try await onThread { try client.putObject(file: big, to: object, contentType: "video/mp4") }
        let fetched = setup.directory.file("fetched")
        #expect(try await session.get("/ui/jobs/\(id)/files/talk.mp4", to: fetched).status == 200)
        #expect(try Data(contentsOf: URL(fileURLWithPath: fetched)) == bytes)
        let part = setup.directory.file("part")
        let ranged = try await session.get("/ui/jobs/\(id)/files/talk.mp4", range: "4000000-8500000", to: part)
        #expect(ranged.status == 206)
        #expect(try Data(contentsOf: URL(fileURLWithPath: part)) == bytes[4_000_000...8_500_000])

        // A file set in the bucket (its output a key template): its pictures are served too.
        let thumbnails = try await server.request(
            "POST",
            "/v1/jobs",
            body:
                #"{"kind":"thumbnails","input":"\#(input)","output":"\#(own)thumbs/{name}","thumbnails":{"at":["0.5s"]}}"#
        )
        let thumbs = try #require(thumbnails.json["id"] as? String, "\(thumbnails.json)")
        let second = try JobctlProcess(
            ["worker", "--db", setup.db, "--name", "w2", "--once", "--s3-root", root] + server.roots,
            log: setup.directory.file("worker2.log")
        )
        #expect(try await second.waitForExit(timeout: .seconds(120))?.status == 0, "\(second.log)")
        let sheet = try await session.get("/ui/jobs/\(thumbs)")
        let picture = try #require(
            sheet.body.range(of: #"<img src="[^"]+/files/[^"]+""#, options: .regularExpression).map {
                String(sheet.body[$0])
            },
            "no picture on the page: \(sheet.body)"
        )
        // The link is relative to the page (`../jobs/ID/files/NAME`): followed from there.
        let link = String(picture.dropFirst(#"<img src=""#.count).dropLast())
        let file = try #require(
            URL(string: link, relativeTo: URL(string: "http://dashboard.test/ui/jobs/\(thumbs)")).flatMap {
                URLComponents(url: $0, resolvingAgainstBaseURL: true)?.percentEncodedPath
            }
        )
        let jpeg = setup.directory.file("thumb.jpg")
        #expect(try await session.get(file, to: jpeg).status == 200)
        #expect(try Data(contentsOf: URL(fileURLWithPath: jpeg)).prefix(3) == Data([0xFF, 0xD8, 0xFF]), "a JPEG")

        // Another tenant, signed in, is told there is no such file; a name the result does not
        // list is not fetched from the bucket.
        let other = try await Jobctl.run(["keys", "create", "--name", "other", "--db", setup.db])
        let stranger = try await DashboardSession(
            base: server.base,
            jar: setup.directory.file("jar2"),
            key: other.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        )
        #expect(try await stranger.get("/ui/jobs/\(id)/files/talk.mp4").status == 404)
        #expect(try await session.get("/ui/jobs/\(id)/files/other.mp4").status == 404)
    }
}
