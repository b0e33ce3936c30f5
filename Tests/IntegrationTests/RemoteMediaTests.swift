import Foundation
import MediaTestKit
import Queue
import QueueSQLite
import Testing

/// Inputs read from and outputs uploaded to a local HTTP server (scripts/media-server.py: GET
/// with byte ranges, PUT stored only when complete), by real worker processes.
@Suite("Remote media", .serialized, .timeLimit(.minutes(5)))
struct RemoteMediaTests {
    struct Setup: Sendable {
        let directory: TemporaryDirectory
        let store: SQLiteJobStore
        let server: HelperServer
        var db: String { directory.file("jobs.sqlite") }
        var staging: String { directory.file("staging") }
        var uploads: String { directory.file("uploads") }

        init(_ label: String, _ behaviour: [String] = []) async throws {
            directory = try TemporaryDirectory(label)
            store = try SQLiteJobStore(path: directory.file("jobs.sqlite"))
            let media = directory.file("media")
            try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: try await Fixtures.shared.path(.basic),
                toPath: media + "/talk.mp4"
            )
            server = try await HelperServer(
                script: "media-server.py",
                directory,
                name: "server",
                ["--root", media, "--uploads", directory.file("uploads")] + behaviour
            )
        }

        /// Submits an export with `preset` (`nil` for the other kinds, which take none).
        func submit(_ input: String, _ arguments: [String], preset: String? = "low") async throws -> JobID {
            let result = try await Jobctl.run(
                ["submit", input, "--db", db, "--allow-private-webhooks"] + (preset.map { ["--preset", $0] } ?? [])
                    + arguments
            )
            try #require(result.status == 0, "submit failed: \(result.stderr)")
            return JobID(result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines))
        }

        /// One `worker --once` run to the end; returns its log.
        func runWorker(_ arguments: [String] = ["--allow-private-webhooks"]) async throws -> String {
            let worker = try JobctlProcess(
                ["worker", "--db", db, "--once", "--staging-dir", staging, "--retry-delay", "100ms"] + arguments,
                log: directory.file("worker.log")
            )
            let exit = try await worker.waitForExit(timeout: .seconds(120))
            #expect(exit?.status == 0, "\(worker.log)")
            return worker.log
        }

        func job(_ id: JobID) async throws -> Job { try #require(try await store.job(id)) }

        func requests(_ method: String) -> [[String: Any]] {
            server.records().filter { $0["method"] as? String == method }
        }

        func stagingLeftovers() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? [] }
    }

    @Test func inputByURLAndOutputByPUT() async throws {
        let setup = try await Setup("remote")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let output = setup.server.url("/out/talk.low.mp4") + "?X-Signature=s3cr3t&X-Expires=600"
        let id = try await setup.submit(
            setup.server.url("/talk.mp4") + "?token=abc",
            ["--range", "1s+2s", "-o", output]
        )
        let log = try await setup.runWorker()

        let job = try await setup.job(id)
        #expect(job.status == .completed, "\(job.error?.message ?? "")")
        #expect(job.attempt == 1)
        // The server received the complete file once, and it is what was asked for.
        let puts = setup.requests("PUT")
        #expect(puts.count == 1, "\(puts)")
        #expect(puts.first?["status"] as? Int == 200 && puts.first?["contentType"] as? String == "video/mp4")
        let uploaded = setup.uploads + "/out/talk.low.mp4"
        let bytes = (try FileManager.default.attributesOfItem(atPath: uploaded)[.size] as? NSNumber)?.intValue
        #expect(puts.first?["bytes"] as? Int == bytes && bytes.map { $0 > 1000 } == true)
        let probe = try await FFProbe.probe(uploaded)
        #expect(probe.video?.codec_name == "h264" && probe.video?.height == 240)
        #expect(abs((probe.format.durationSeconds ?? 0) - 2) < 0.1, "duration \(probe.format.durationSeconds ?? 0)")
        #expect(try await FFProbe.decodeErrors(uploaded).isEmpty)
        // The input was read with byte ranges (its index is at the end).
        #expect(
            setup.requests("GET").contains {
                ($0["range"] as? String)?.hasPrefix("bytes=") == true && $0["range"] as? String != "bytes=0-"
            }
        )
        // The result and the job JSON show the URLs without their signatures.
        #expect(job.result?["output"]?.stringValue == setup.server.url("/out/talk.low.mp4"))
        #expect(job.result?["bytes"]?.doubleValue.map(Int.init) == bytes)
        let show = try await Jobctl.run(["show", id.rawValue, "--db", setup.db, "--json"])
        #expect(
            !show.stdoutText.contains("s3cr3t") && !show.stdoutText.contains("token=abc") && !log.contains("s3cr3t"),
            "a signature leaked"
        )
        #expect(setup.stagingLeftovers().isEmpty, "staging: \(setup.stagingLeftovers())")
    }

    @Test func aFailedUploadIsRetriedWithinTheAttempt() async throws {
        let setup = try await Setup("put-retry", ["--fail-put-first", "1"])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let id = try await setup.submit(
            setup.server.url("/talk.mp4"),
            ["--range", "0+1s", "-o", setup.server.url("/out/a.mp4")]
        )
        _ = try await setup.runWorker()

        let job = try await setup.job(id)
        #expect(job.status == .completed && job.attempt == 1, "\(job.status) \(job.error?.message ?? "")")
        let puts = setup.requests("PUT")
        #expect(puts.map { $0["status"] as? Int } == [500, 200], "\(puts)")
        #expect(puts.last?["bytes"] as? Int == puts.first?["bytes"] as? Int)
        #expect(try await FFProbe.probe(setup.uploads + "/out/a.mp4").video?.codec_name == "h264")
        #expect(setup.stagingLeftovers().isEmpty)
    }

    @Test func aRefusedUploadFailsTheJobWithoutRetrying() async throws {
        let setup = try await Setup("put-403", ["--put-status", "403"])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let id = try await setup.submit(
            setup.server.url("/talk.mp4"),
            ["--range", "0+1s", "-o", setup.server.url("/out/a.mp4?X-Signature=expired")]
        )
        _ = try await setup.runWorker()

        let job = try await setup.job(id)
        #expect(job.status == .failed && job.attempt == 1)
        #expect(
            job.error?.code == .outputUnwritable && job.error?.retryable == false
                && job.error?.message.contains("HTTP 403") == true,
            "\(job.error?.message ?? "")"
        )
        #expect(job.error?.message.contains("expired") == false)
        #expect(setup.requests("PUT").count == 1)
        #expect(!FileManager.default.fileExists(atPath: setup.uploads + "/out/a.mp4"))
        #expect(setup.stagingLeftovers().isEmpty)
    }

    @Test func anInputThatIsNotThereIsInputNotFound() async throws {
        let setup = try await Setup("404")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let id = try await setup.submit(setup.server.url("/gone.mp4"), ["-o", setup.directory.file("gone.mp4")])
        _ = try await setup.runWorker()

        let job = try await setup.job(id)
        #expect(job.status == .failed && job.attempt == 1)
        #expect(job.error?.code == .inputNotFound && job.error?.retryable == false, "\(job.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: setup.directory.file("gone.mp4")))
    }

    @Test func aRedirectingInputIsNotFollowed() async throws {
        let setup = try await Setup("redirect", ["--redirect-get", "http://169.254.169.254/latest/meta-data/"])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let id = try await setup.submit(setup.server.url("/talk.mp4"), ["-o", setup.directory.file("r.mp4")])
        _ = try await setup.runWorker()

        let job = try await setup.job(id)
        #expect(job.status == .failed && job.error?.code == .inputUnreadable && job.error?.retryable == false)
        #expect(job.error?.message.contains("redirects are not followed") == true, "\(job.error?.message ?? "")")
    }

    @Test func anUntrustedCertificateIsRefused() async throws {
        let directory = try TemporaryDirectory("tls-cert")
        defer { directory.remove() }
        let pem = directory.file("self-signed.pem")
        _ = try await ProcessRunner.check(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", pem, "-out", pem,
            ]
        )
        let setup = try await Setup("tls", ["--tls-cert", pem])
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        let id = try await setup.submit(
            "https://127.0.0.1:\(setup.server.port)/talk.mp4",
            ["-o", setup.directory.file("t.mp4")]
        )
        _ = try await setup.runWorker()

        let job = try await setup.job(id)
        #expect(job.status == .failed && job.attempt == 1)
        #expect(job.error?.code == .inputUnreadable && job.error?.retryable == false, "\(job.error?.message ?? "")")
        #expect(
            job.error?.message.lowercased().contains("certificate") == true
                || job.error?.message.contains("SSL") == true,
            "\(job.error?.message ?? "")"
        )
        #expect(setup.requests("GET").isEmpty, "the request went through")
    }

    @Test func theGuardRefusesPrivateMediaAddresses() async throws {
        let setup = try await Setup("guard")
        defer {
            setup.directory.remove()
            setup.server.stop()
        }
        // submit refuses what it can see without resolving names…
        let input = try await Fixtures.shared.path(.basic)
        let output = try await Jobctl.run([
            "submit", input, "--db", setup.db, "--preset", "low", "-o", "http://10.0.0.8/bucket/a.mp4",
        ])
        #expect(output.status == 64 && output.stderr.contains("output_forbidden"), "\(output.stderr)")
        let remoteInput = try await Jobctl.run([
            "submit", "http://169.254.169.254/latest/meta-data/", "--db", setup.db, "--preset", "low",
        ])
        #expect(remoteInput.status == 64 && remoteInput.stderr.contains("input_unreadable"), "\(remoteInput.stderr)")
        let scheme = try await Jobctl.run([
            "submit", input, "--db", setup.db, "--preset", "low", "-o", "ftp://example.com/a.mp4",
        ])
        #expect(scheme.status == 64, "\(scheme.stderr)")

        // …and the worker refuses a name that resolves to loopback, on connect.
        let host = WebhookDeliveryTests.loopbackName()
        let inputID = try await setup.submit(
            "http://\(host):\(setup.server.port)/talk.mp4",
            ["-o", setup.directory.file("x.mp4")]
        )
        let outputID = try await setup.submit(
            input,
            ["--range", "0+1s", "-o", "http://\(host):\(setup.server.port)/out/x.mp4"]
        )
        _ = try await setup.runWorker([])

        let refusedInput = try await setup.job(inputID)
        #expect(
            refusedInput.status == .failed && refusedInput.error?.code == .inputUnreadable
                && refusedInput.error?.retryable == false,
            "\(refusedInput.error?.message ?? "")"
        )
        let refusedOutput = try await setup.job(outputID)
        #expect(
            refusedOutput.status == .failed && refusedOutput.error?.code == .outputForbidden,
            "\(refusedOutput.error?.message ?? "")"
        )
        #expect(setup.server.records().isEmpty, "the server was reached: \(setup.server.records())")
        #expect(setup.stagingLeftovers().isEmpty)
    }

    /// An HLS playlist by URL (issue 31): read when everything it names is on its own origin;
    /// refused, before anything there is fetched, when it names another server. A DASH
    /// manifest by URL is refused (FFmpeg's DASH reader would open what it names unguarded).
    @Test func aRemotePlaylistReadsOnlyFromItsOwnOrigin() async throws {
        let setup = try await Setup("remote-hls")
        let other = try await HelperServer(
            script: "media-server.py",
            setup.directory,
            name: "other",
            ["--root", setup.directory.file("media"), "--uploads", setup.directory.file("other-uploads")]
        )
        defer {
            setup.directory.remove()
            setup.server.stop()
            other.stop()
        }
        let set = setup.directory.file("media/hls")
        try FileManager.default.createDirectory(atPath: set, withIntermediateDirectories: true)
        let source = [
            "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i",
            "sine=f=440:sample_rate=48000", "-t", "3", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25",
            "-pix_fmt", "yuv420p", "-c:a", "aac",
        ]
        _ = try await ProcessRunner.check(
            "ffmpeg",
            source + [
                "-f", "hls", "-hls_time", "1", "-hls_segment_type", "fmp4", "-hls_playlist_type", "vod",
                "-hls_segment_filename", "\(set)/seg%d.m4s", "\(set)/index.m3u8",
            ]
        )
        _ = try await ProcessRunner.check(
            "ffmpeg",
            source + ["-f", "dash", "-seg_duration", "1", "\(set)/manifest.mpd"]
        )
        let playlist = try String(contentsOfFile: "\(set)/index.m3u8", encoding: .utf8)
        let elsewhere = playlist.replacingOccurrences(of: "\nseg1.m4s", with: "\n" + other.url("/hls/seg1.m4s"))
        try Data(elsewhere.utf8).write(to: URL(fileURLWithPath: "\(set)/elsewhere.m3u8"))

        let good = try await setup.submit(
            setup.server.url("/hls/index.m3u8"),
            ["-o", setup.directory.file("good.mp4")]
        )
        let bad = try await setup.submit(
            setup.server.url("/hls/elsewhere.m3u8"),
            ["-o", setup.directory.file("bad.mp4")]
        )
        let dash = try await setup.submit(
            setup.server.url("/hls/manifest.mpd"),
            ["-o", setup.directory.file("dash.mp4")]
        )
        for _ in 0..<3 { _ = try await setup.runWorker() }

        let read = try await setup.job(good)
        #expect(read.status == .completed, "\(read.error?.message ?? "")")
        let probe = try await FFProbe.probe(setup.directory.file("good.mp4"))
        #expect(abs((probe.format.durationSeconds ?? 0) - 3.0) < 0.15, "\(probe.format.duration ?? "?")")
        #expect(try await FFProbe.videoFrameTimes(setup.directory.file("good.mp4")).count == 75)
        let fetched = Set(setup.requests("GET").compactMap { $0["path"] as? String })
        #expect(
            fetched.isSuperset(of: ["/hls/index.m3u8", "/hls/init.mp4", "/hls/seg0.m4s", "/hls/seg2.m4s"]),
            "\(fetched)"
        )

        let refused = try await setup.job(bad)
        #expect(
            refused.status == .failed && refused.error?.code == .inputUnsupported,
            "\(refused.error?.message ?? "")"
        )
        #expect(
            refused.error?.message.contains("its own scheme, host and port") == true,
            "\(refused.error?.message ?? "")"
        )
        #expect(other.records().isEmpty, "the other server was reached: \(other.records())")
        #expect(!FileManager.default.fileExists(atPath: setup.directory.file("bad.mp4")))

        let manifest = try await setup.job(dash)
        #expect(
            manifest.status == .failed && manifest.error?.code == .inputUnsupported,
            "\(manifest.error?.message ?? "")"
        )
        #expect(manifest.error?.message.contains("DASH manifests read from a URL") == true)
        #expect(setup.stagingLeftovers().isEmpty)
    }
}
