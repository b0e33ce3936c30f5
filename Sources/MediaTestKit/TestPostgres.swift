import Foundation

/// A real PostgreSQL server for tests: `JOBCTL_TEST_POSTGRES` (what `make test` starts), else a
/// throwaway cluster started for this test process (scripts/test-postgres.sh), which stops
/// itself when the process exits. Tests that need PostgreSQL run; they are never skipped.
public actor TestPostgres {
    public static let shared = TestPostgres()

    private var server: Task<String, any Error>?

    /// The server's URL (its `postgres` database).
    public func serverURL() async throws -> String {
        if let server { return try await server.value }
        let task = Task { () throws -> String in
            if let url = ProcessInfo.processInfo.environment["JOBCTL_TEST_POSTGRES"], !url.isEmpty { return url }
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
                .appendingPathComponent("scripts/test-postgres.sh").path
            let directory = self.directory
            let port = 20000 + Int(ProcessInfo.processInfo.processIdentifier % 20000)
            let result = try await ProcessRunner.check(
                script,
                ["start", directory, "\(port)", "\(ProcessInfo.processInfo.processIdentifier)"]
            )
            return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        server = task
        return try await task.value
    }

    /// The CA certificate of the server's self-signed TLS certificate (for 127.0.0.1).
    public func certificateAuthority() async throws -> String {
        _ = try await serverURL()
        if let path = ProcessInfo.processInfo.environment["JOBCTL_TEST_POSTGRES_CA"], !path.isEmpty { return path }
        return directory + "/ca.crt"
    }

    private var directory: String {
        NSTemporaryDirectory() + "jobctl-postgres-\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// A new, empty database on the server; its URL.
    public func freshDatabase(_ label: String = "test") async throws -> String {
        let server = try await serverURL()
        let name =
            "jobctl_\(label.lowercased().filter { $0.isLetter || $0.isNumber })_\(UUID().uuidString.prefix(8).lowercased())"
        try await ProcessRunner.check("psql", [server, "-q", "-c", "CREATE DATABASE \(name)"])
        let base = server.hasSuffix("/postgres") ? String(server.dropLast("/postgres".count)) : server
        return "\(base)/\(name)?sslmode=disable"
    }
}
