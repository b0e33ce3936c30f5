import Foundation
import MediaTestKit
import Testing

/// deploy/: what can be checked without a container engine (deploy/check.sh): the systemd unit
/// passes `systemd-analyze verify` with the built binary, the compose file parses and has the
/// fleet the docs describe, and the image's runtime packages exist in Debian's archive.
@Suite("Deployment files")
struct DeployTests {
    @Test func deployFilesCheckOut() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let result = try await ProcessRunner.run(
            "bash",
            [root.appendingPathComponent("deploy/check.sh").path, Jobctl.path]
        )
        #expect(result.status == 0, "\(result.stdoutText)\(result.stderr)")
        #expect(
            result.stdoutText.contains("ok: systemd-analyze verify") && result.stdoutText.contains("ok: compose.yaml")
        )
    }
}
