import Foundation
import MediaTestKit
import Testing

/// Every host spelling an adversarial pass got past `submit` (it was refused only on connect)
/// is refused at submit, as a webhook, an input and an output URL, with the right code, and
/// without showing the URL's query string.
@Suite("Submit refuses private addresses in every spelling", .timeLimit(.minutes(3)))
struct SubmitAddressTests {
    static let hosts = [
        "0x7f000001", "2130706433", "127.1", "0177.0.0.1", "0", "0x7f.1", "127.000.000.001", "localhost.",
        "[fe80::1%25lo]", "[::127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]",
    ]

    @Test(arguments: hosts)
    func refusedAtSubmit(_ host: String) async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("ssrf") { directory in
            let db = directory.file("jobs.sqlite")
            let url = "http://\(host):8080/path?token=s3cret"
            let cases: [([String], String)] = [
                (
                    ["submit", input, "--preset", "low", "-o", directory.file("o.mp4"), "--webhook", url],
                    "webhook_forbidden"
                ),
                (["submit", url, "--preset", "low", "-o", directory.file("o.mp4")], "input_unreadable"),
                (["submit", input, "--preset", "low", "-o", url], "output_forbidden"),
            ]
            for (arguments, code) in cases {
                let result = try await Jobctl.run(arguments + ["--db", db])
                #expect(result.status == 64, "\(host) as \(code): \(result.stderr)")
                #expect(result.stderr.hasPrefix("error: \(code): "), "\(host): \(result.stderr)")
                #expect(!result.stderr.contains("s3cret"), "\(host): the query was shown: \(result.stderr)")
            }
            let list = try await Jobctl.run(["list", "--db", db, "--json"])
            #expect((try Jobctl.json(list) as? [Any])?.isEmpty == true, "nothing was queued")
            // --allow-private-webhooks lifts it (a self-hosted receiver).
            let allowed = try await Jobctl.run([
                "submit", input, "--preset", "low", "-o", directory.file("o.mp4"), "--webhook", url, "--db", db,
                "--allow-private-webhooks",
            ])
            #expect(allowed.status == 0, "\(allowed.stderr)")
        }
    }

    /// The address refusals come before the look at the input: a forbidden webhook is the
    /// answer even when the input would also be refused (audio only into a video preset).
    @Test func cheapRefusalsComeFirst() async throws {
        let input = try await Fixtures.shared.path(.audioOnly)
        try await withTemporaryDirectory("cheap-first") { directory in
            let db = directory.file("jobs.sqlite")
            let probed = try await Jobctl.run([
                "submit", input, "--kind", "thumbnails", "--count", "2", "-o", directory.file("t"), "--db", db,
            ])
            #expect(probed.status != 0 && probed.stderr.contains("input_unsupported"), "\(probed.stderr)")
            let result = try await Jobctl.run([
                "submit", input, "--kind", "thumbnails", "--count", "2", "-o", directory.file("t"), "--db", db,
                "--webhook", "http://127.0.0.1:9/hook",
            ])
            #expect(result.status == 64, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("error: webhook_forbidden: "), "\(result.stderr)")
        }
    }
}
