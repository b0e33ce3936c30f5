import Foundation
import MediaTestKit
import Testing

/// Every error is one line, `error: CODE: message`, naming the key, the value and the file.
@Suite("Error messages", .timeLimit(.minutes(2)))
struct MessageTests {
    struct PresetsCase: Sendable, CustomStringConvertible {
        var json: String
        var says: String
        var description: String { says }
    }

    static let presetsCases: [PresetsCase] = [
        .init(
            json: #"[{"name":"x","summary":"s","format":"mp4","video":{"codec":"h264","crf":20.5}}]"#,
            says: "preset 'x': video.crf must be a whole number, not 20.5"
        ),
        .init(
            json:
                #"[{"name":"x","summary":"s","format":"mp4","video":{"codec":"h264","bitrate":99999999999999999999}}]"#,
            says: "preset 'x': video.bitrate must be a whole number, not 99999999999999999999"
        ),
        .init(
            json: #"[{"name":"x","summary":"s","format":"mp4","video":{"codec":"h264","crf":"20"}}]"#,
            says: "video.crf must be a whole number, not \"20\""
        ),
        .init(
            json: #"[{"name":"x","summary":"s","format":"mp4","video":{"codec":"h265"}}]"#,
            says: "video.codec is one of h264, hevc, copy, not \"h265\""
        ),
        .init(
            json: #"[{"name":"x","summary":"s","format":"mp4","video":{"codec":"h264","crff":20}}]"#,
            says: "unknown key 'video.crff'"
        ),
        .init(json: #"[{"name":"x","format":"mp4","video":{"codec":"h264"}}]"#, says: "preset 'x': summary is missing"),
        .init(
            json: #"[{"name":"x","summary":"s","format":"mp4","video":{"codec":"h264","crf":60}}]"#,
            says: "video.crf is between 0 and 51, not 60"
        ),
        .init(
            json: #"[{"name":"x","summary":"s","format":"mp4","audio":{"codec":"aac","channels":true}}]"#,
            says: "audio.channels must be a whole number, not true"
        ),
        .init(json: #"{"name":"x"}"#, says: "is not a JSON list of presets"),
        .init(json: #"[{"name":"#, says: "is not valid JSON"),
    ]

    @Test(arguments: presetsCases)
    func aBadPresetsFileSaysWhatAndWhere(_ test: PresetsCase) async throws {
        try await withTemporaryDirectory("presets-message") { directory in
            let file = directory.file("presets.json")
            try Data(test.json.utf8).write(to: URL(fileURLWithPath: file))
            let result = try await Jobctl.run(["presets", "--presets", file])
            #expect(result.status == 64, "\(result.stderr)")
            #expect(
                result.stderr.hasPrefix("error: usage: presets file \(file): ") && result.stderr.contains(test.says),
                "\(result.stderr)"
            )
            #expect(result.stderr.split(separator: "\n").count == 1, "one line: \(result.stderr)")
        }
    }

    @Test func aPresetsPathThatIsADirectoryOrMissing() async throws {
        let directory = try await Jobctl.run(["presets", "--presets", "/tmp"])
        #expect(
            directory.stderr == "error: usage: presets file /tmp: is a directory, not a JSON file\n",
            "\(directory.stderr)"
        )
        let missing = try await Jobctl.run(["presets", "--presets", "/nonexistent/presets.json"])
        #expect(
            missing.stderr == "error: usage: presets file /nonexistent/presets.json: does not exist\n",
            "\(missing.stderr)"
        )
    }

    /// What `presets --json` prints can be edited and read back (its `ffmpeg` and `ffmpegHDR`
    /// keys are ignored).
    @Test func thePresetsJSONOutputIsAValidPresetsFile() async throws {
        try await withTemporaryDirectory("presets-roundtrip") { directory in
            let printed = try await Jobctl.run(["presets", "--json"])
            let list = try #require(try JSONSerialization.jsonObject(with: printed.stdout) as? [[String: Any]])
            var custom = list[0]
            custom["name"] = "low-copy"
            let file = directory.file("presets.json")
            try JSONSerialization.data(withJSONObject: [custom]).write(to: URL(fileURLWithPath: file))
            let result = try await Jobctl.run(["presets", "--presets", file])
            #expect(result.status == 0 && result.stdoutText.contains("low-copy"), "\(result.stderr)")
        }
    }

    @Test func usageErrorsAreOneLineWithACode() async throws {
        let input = try await Fixtures.shared.path(.basic)
        let cases: [([String], String)] = [
            (
                ["export", input, "--preset"],
                "error: usage: Missing value for '--preset <preset>' (see jobctl export --help)"
            ),
            (["export"], "error: usage: Missing expected argument '<input>' (see jobctl export --help)"),
            (["frobnicate"], "error: usage: Unexpected argument 'frobnicate' (see jobctl --help)"),
            (
                ["submit", input, "--preset", "low", "--range", "5-1"],
                "error: range_out_of_bounds: invalid range '5-1': the end must be after the start"
            ),
            (
                ["export", input, "--preset", "ultra", "-o", "/tmp/x.mp4"],
                "error: preset_unknown: no preset named 'ultra'"
            ),
            (["show", "nope"], "error: usage: 'nope' is not a job id"),
            // An operator's setting is checked like a request's field (1e-300 once crashed
            // the server on a key's second request, converting Retry-After).
            (["serve", "--rate-limit", "1e-300"], "error: usage: --rate-limit is 0 (no limit) or between 0.01"),
            (["serve", "--rate-limit", "nan"], "error: usage: --rate-limit is 0 (no limit) or between 0.01"),
            (
                ["submit", input, "--preset", "low"]
                    + (0..<9).flatMap { ["--metadata", "k\($0)=" + String(repeating: "v", count: 1000)] },
                "error: invalid_request: --metadata is at most 32 entries"
            ),
        ]
        for (arguments, line) in cases {
            let result = try await Jobctl.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.hasPrefix(line) && result.stderr.split(separator: "\n").count == 1,
                "\(arguments): \(result.stderr)"
            )
        }
    }

    @Test func databaseErrorsSayWhatIsWrong() async throws {
        let missing = try await Jobctl.run(["list", "--db", "/nonexistent/dir/jobs.sqlite"])
        #expect(missing.status == 1)
        #expect(
            missing.stderr
                == "error: database_unavailable: cannot open the job database /nonexistent/dir/jobs.sqlite: the directory /nonexistent/dir does not exist\n",
            "\(missing.stderr)"
        )
        try await withTemporaryDirectory("db-message") { directory in
            let unknown = try await Jobctl.run([
                "show", "01a1fcfe-445e-72f9-8532-1a69acb54dcf", "--db", directory.file("jobs.sqlite"),
            ])
            #expect(
                unknown.status == 1
                    && unknown.stderr == "error: not_found: no job 01a1fcfe-445e-72f9-8532-1a69acb54dcf\n",
                "\(unknown.stderr)"
            )
        }
    }

    /// A range past the end names both times to the millisecond (not "lasts 10s" for 10.0079).
    @Test func aRangePastTheEndShowsBothTimesPrecisely() async throws {
        let input = try await Fixtures.shared.path(.basic)
        let result = try await Jobctl.run([
            "export", input, "--preset", "low", "--range", "4.008+1", "-o", "/tmp/never.mp4",
        ])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("range_out_of_bounds: the range starts at 4.008s but ")
                && result.stderr.contains(" lasts 4.000s"),
            "\(result.stderr)"
        )
    }
}

/// `serve`'s setup errors have codes of their own, not `internal`.
@Suite("serve setup errors")
struct ServeSetupErrorTests {
    @Test func aMismatchedKeyAndAnAddressThatCannotBeUsedSayWhy() async throws {
        try await withTemporaryDirectory("serve-setup") { directory in
            let db = directory.file("jobs.sqlite")
            for name in ["a", "b"] {
                try await ProcessRunner.check(
                    "openssl",
                    [
                        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=\(name)",
                        "-keyout",
                        directory.file("\(name).key"), "-out", directory.file("\(name).crt"),
                    ]
                )
            }
            let tls = try await Jobctl.run([
                "serve", "--db", db, "--listen", "127.0.0.1:0", "--tls-cert", directory.file("a.crt"), "--tls-key",
                directory.file("b.key"),
            ])
            #expect(tls.status == 64 && tls.stderr.hasPrefix("error: tls_invalid: the key"), "\(tls.stderr)")
            // Not an address: refused at once, without asking a resolver.
            let host = try await Jobctl.run(["serve", "--db", db, "--listen", "256.1.1.1:8080"])
            #expect(
                host.status == 64 && host.stderr.hasPrefix("error: usage: --listen takes an IP address"),
                "\(host.stderr)"
            )
            // A port another socket holds.
            let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(holder) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(holder, $0, length) }
            }
            listen(holder, 1)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(holder, $0, &length) }
            }
            let port = Int(UInt16(bigEndian: address.sin_port))
            let busy = try await Jobctl.run(["serve", "--db", db, "--listen", "127.0.0.1:\(port)"])
            #expect(
                busy.status == 1 && busy.stderr.hasPrefix("error: listen_failed:") && busy.stderr.contains("in use"),
                "\(busy.stderr)"
            )
        }
    }
}

/// What tenants sent (paths, metadata, error messages naming them) reaches the operator's
/// terminal escaped: no escape sequence, carriage return, newline or bidi override comes
/// through raw in `show`, `list` or `watch --once`.
@Suite("Terminal safety")
struct TerminalSafetyTests {
    @Test func tenantStringsAreShownEscaped() async throws {
        try await withTemporaryDirectory("terminal") { directory in
            let db = directory.file("jobs.sqlite")
            let hostile = "\u{1B}[2J\u{1B}]0;pwned\u{07}evil\r\nfake line\u{202E}txt.exe"
            let output = directory.file("out\u{1B}[31m.mp4")
            let submitted = try await Jobctl.run([
                "submit", "https://media.example/in.mov", "--db", db, "--preset", "low", "-o", output,
                "--metadata", "note=\(hostile)", "--metadata", "k\u{1B}[1m=v",
            ])
            try #require(submitted.status == 0, "\(submitted.stderr)")
            let id = submitted.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
            for arguments in [["show", id], ["list"]] {
                let result = try await Jobctl.run(arguments + ["--db", db])
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                let bytes = [UInt8](result.stdout)
                #expect(
                    !bytes.contains(0x1B) && !bytes.contains(0x0D) && !bytes.contains(0x07),
                    "\(arguments): raw control bytes"
                )
                #expect(!result.stdoutText.contains("\u{202E}"), "\(arguments): a bidi override")
                #expect(result.stdoutText.contains("\\e[31m"), "\(arguments): \(result.stdoutText)")
                if arguments[0] == "show" {
                    #expect(result.stdoutText.contains(#"evil\r\nfake line\u{202E}txt.exe"#), "\(result.stdoutText)")
                    #expect(
                        !result.stdoutText.contains("\nfake line"),
                        "a newline of the tenant's made a line of its own"
                    )
                }
            }
            // The worker's text log too: a job whose input and error message carry escape
            // sequences and newlines logs them escaped.
            let hostileInput = directory.file("in\u{1B}[2J\nforged.mov")
            let second = try await Jobctl.run([
                "submit", hostileInput, "--db", db, "--preset", "low", "-o", directory.file("o.mp4"),
            ])
            #expect(second.status == 0, "\(second.stderr)")
            let worker = try await Jobctl.run(["worker", "--db", db, "--once", "-v", "--name", "w"])
            let log = [UInt8](worker.stderr.utf8)
            #expect(!log.contains(0x1B), "a raw escape in the worker's log")
            #expect(worker.stderr.contains("\\e[2J\\nforged.mov"), "\(worker.stderr)")
            // --json keeps the values as they are (JSON escapes them itself).
            let json = try await Jobctl.run(["show", id, "--db", db, "--json"])
            let parsed = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
            #expect((parsed["metadata"] as? [String: String])?["note"] == hostile)
        }
    }
}
