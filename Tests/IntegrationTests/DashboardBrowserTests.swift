import Foundation
import MediaTestKit
import Testing

/// The dashboard used by a person in a real browser (scripts/browser-dashboard.py: Debian's
/// Chromium through chromedriver and selenium), in front of `jobctl serve` and a real worker
/// process. Fails, never skips, when the browser is missing.
@Suite("Dashboard in a browser", .serialized, .timeLimit(.minutes(5)))
struct DashboardBrowserTests {
    @Test(arguments: ["sqlite", "postgres"])
    func aPersonSignsInWatchesAJobAndActsOnIt(store: String) async throws {
        let directory = try TemporaryDirectory("dashboard-browser")
        defer { directory.remove() }
        let db =
            store == "sqlite" ? directory.file("jobs.sqlite") : try await TestPostgres.shared.freshDatabase("dashboard")
        let server = try await APILiveTests.Server(directory, db: db)
        defer { server.process.signal(SIGKILL) }
        let created = try await Jobctl.run(["keys", "create", "--name", "looker", "--scope", "read", "--db", db])
        try #require(created.status == 0, "keys create: \(created.stderr)")
        let readKey = created.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let admin = try await Jobctl.run(["keys", "create", "--name", "ops", "--scope", "admin", "--db", db])
        try #require(admin.status == 0, "keys create: \(admin.stderr)")
        let input = try await server.place(.basic)
        // Screenshots stay with the build, for docs/dashboard.md and for a person to look at.
        let shots = URL(fileURLWithPath: Jobctl.path).deletingLastPathComponent()
            .appendingPathComponent("dashboard-screenshots/\(store)").path
        let config: [String: Any] = [
            "base": server.base,
            "submit_key": server.key,
            "read_key": readKey,
            "admin_key": admin.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines),
            "job": ["input": input, "output": "dashboard.mp4", "preset": "low", "range": "0s+1s"],
            "job_again": ["input": input, "output": "behind-proxy.mp4", "preset": "low", "range": "0s+1s"],
            "waveform": ["kind": "waveform", "input": input, "output": "wave"],
            "hls": ["kind": "hls", "input": input, "output": "ladder", "hls": ["ladder": "234p"]]
                as [String: Any],
            "thumbnails": [
                "kind": "thumbnails", "input": input, "output": "thumbs", "thumbnails": ["at": ["0.2s", "0.8s"]],
            ] as [String: Any],
            "worker": [Jobctl.path, "worker", "--db", db, "--name", "browser-worker"] + server.roots,
            "screenshots": shots,
        ]
        let configPath = directory.file("browser.json")
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
        let result = try await ProcessRunner.run(APILiveTests.script("browser-dashboard.sh"), [configPath])
        let report = (try? JSONSerialization.jsonObject(with: Data(result.stdoutText.utf8))) as? [String: Any]
        #expect(
            result.status == 0 && report?["ok"] as? Bool == true,
            "\(result.stdoutText) \(result.stderr) \(server.process.log)"
        )
        #expect((report?["steps"] as? [String])?.count == 17, "\(report ?? [:])")
        for name in [
            "signin", "jobs", "jobs-360", "job", "thumbnails", "waveform", "job-read-only", "fleet", "bulk-confirm",
            "job-behind-proxy",
        ] {
            #expect(FileManager.default.fileExists(atPath: "\(shots)/\(name).png"), "no screenshot \(name)")
        }
        // The output is real: ffprobe reads what the browser watched complete.
        let probed = try await ProcessRunner.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", server.output("dashboard.mp4")]
        )
        let duration = Double(probed.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(abs(duration - 1) < 0.1, "\(probed.stdoutText) \(probed.stderr)")
    }
}
