import Foundation
import MediaTestKit
import Testing

/// `jobctl submit --options JSON`: a kind's request as the API takes it, so a kind without flags
/// of its own can be submitted from the command line, and the same request gives the same row
/// whichever way it is written.
@Suite("submit --options: a kind's request as JSON", .timeLimit(.minutes(3)))
struct SubmitOptionsTests {
    @Test("flags and --options make the same stored options; a bad field is named as a flag")
    func optionsEqualFlags() async throws {
        let input = try await Fixtures.shared.path(.basic)
        try await withTemporaryDirectory("submit-options") { directory in
            let db = directory.file("jobs.sqlite")
            let flags = try await Jobctl.run([
                "submit", input, "--db", db, "--kind", "thumbnails", "--at", "1s,50%", "--size", "64x",
                "-o", directory.file("a"), "--json",
            ])
            #expect(flags.status == 0, "\(flags.stderr)")
            let json = try await Jobctl.run([
                "submit", input, "--db", db, "--kind", "thumbnails", "--options",
                #"{"at": ["1s", "50%"], "size": "64x"}"#,
                "-o", directory.file("b"), "--json",
            ])
            #expect(json.status == 0, "\(json.stderr)")
            let first = try #require(try Jobctl.json(flags) as? [String: Any])
            let second = try #require(try Jobctl.json(json) as? [String: Any])
            let settings = { (job: [String: Any]) in
                (try? JSONSerialization.data(withJSONObject: job["presetSettings"] ?? NSNull(), options: .sortedKeys))
                    ?? Data()
            }
            #expect(!settings(first).isEmpty && settings(first) == settings(second))

            let bad = try await Jobctl.run([
                "submit", input, "--db", db, "--kind", "thumbnails", "--options", #"{"count": 0}"#,
                "-o", directory.file("c"),
            ])
            #expect(
                bad.status == 64 && bad.stderr.hasPrefix("error: invalid_request: --count is between 1 and"),
                "\(bad.stderr)"
            )
            let both = try await Jobctl.run([
                "submit", input, "--db", db, "--kind", "thumbnails", "--options", "{}", "--count", "3",
                "-o", directory.file("d"),
            ])
            #expect(both.status == 64 && both.stderr.contains("alternatives"), "\(both.stderr)")
            let stray = try await Jobctl.run([
                "submit", input, "--db", db, "--kind", "thumbnails", "--preset", "low", "-o", directory.file("e"),
            ])
            #expect(stray.status == 64 && stray.stderr.contains("--preset is for --kind export"), "\(stray.stderr)")
            // Only an export reads the presets file: a broken one does not stop thumbnails.
            let broken = directory.file("broken.json")
            try Data("{".utf8).write(to: URL(fileURLWithPath: broken))
            let unaffected = try await Jobctl.run(
                ["submit", input, "--db", db, "--kind", "thumbnails", "--count", "2", "-o", directory.file("f")],
                environment: ["JOBCTL_PRESETS": broken]
            )
            #expect(unaffected.status == 0, "\(unaffected.stderr)")
            let list = try await Jobctl.run(["list", "--db", db, "--json"])
            #expect((try Jobctl.json(list) as? [Any])?.count == 3, "only the three good requests were queued")
        }
    }
}
