import Foundation
import MediaTestKit
import Testing

/// Connecting to PostgreSQL as users do (docs/spec.md §2 `--db postgres://…`): TLS modes with libpq's
/// meanings against a server with a self-signed certificate, and a database that cannot be
/// reached failing with its reason instead of hanging.
@Suite("PostgreSQL connections", .timeLimit(.minutes(3)))
struct PostgresConnectionTests {
    /// The fresh database's URL without the tests' `sslmode=disable`.
    func bareURL(_ label: String) async throws -> String {
        let url = try await TestPostgres.shared.freshDatabase(label)
        return String(url.prefix { $0 != "?" })
    }

}

extension PostgresConnectionTests {
    /// The tests of PostgresConnectionTests whose assertion is about time: `make test` runs them on their
    /// own, one at a time, after the others (`make test-timing`).
    @Suite("PostgreSQL connections: timing", .serialized)
    struct Timing {
        let outer = PostgresConnectionTests()

        @Test func tlsModesMeanWhatTheyMeanInLibpq() async throws {
            let base = try await outer.bareURL("tls")
            let authority = try await TestPostgres.shared.certificateAuthority()
            for query in [
                "", "?sslmode=prefer", "?sslmode=require", "?sslmode=verify-ca&sslrootcert=\(authority)",
                "?sslmode=verify-full&sslrootcert=\(authority)",
            ] {
                let result = try await Jobctl.run(["migrate", "--db", base + query])
                #expect(result.status == 0, "\(query): \(result.stderr)")
            }

            let started = ContinuousClock.now
            let untrusted = try await Jobctl.run(["list", "--db", base + "?sslmode=verify-full"])
            #expect(untrusted.status == 1)
            #expect(
                untrusted.stderr.contains(
                    "cannot be reached: its TLS certificate is not trusted (give the CA with sslrootcert=PATH"
                ),
                "\(untrusted.stderr)"
            )
            #expect(
                ContinuousClock.now - started < .seconds(10),
                "a certificate that is not trusted is not worth waiting for"
            )

            let unknown = try await Jobctl.run(["list", "--db", base + "?sslmode=sometimes"])
            // A malformed location is a usage error (exit 64), not an outage.
            #expect(unknown.status == 64, "\(unknown.stderr)")
            #expect(unknown.stderr.hasPrefix("error: usage: sslmode=sometimes is not one of"), "\(unknown.stderr)")
            let notAURL = try await Jobctl.run(["list", "--db", "postgres://"])
            #expect(notAURL.status == 64, "\(notAURL.stderr)")
            #expect(
                notAURL.stderr.contains("is not a postgres://user:password@host:port/database URL"),
                "\(notAURL.stderr)"
            )

            // The default (prefer) encrypts: the server says so of the worker's connections.
            let directory = try TemporaryDirectory("tls")
            defer { directory.remove() }
            let worker = try JobctlProcess(["worker", "--db", base], log: directory.file("w.log"))
            defer { worker.signal(SIGKILL) }
            let sql = """
                SELECT count(*), bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
                """
            let encrypted = try await eventually(within: .seconds(15)) {
                let answer = try await ProcessRunner.check("psql", [base + "?sslmode=disable", "-XAtq", "-c", sql])
                    .stdoutText
                return answer.hasSuffix("|t\n") && !answer.hasPrefix("0|")
            }
            #expect(encrypted, "\(worker.log)")
        }

        @Test func aDatabaseThatCannotBeReachedFailsWithTheReason() async throws {
            let base = try await outer.bareURL("reach")
            let missing = base.replacingOccurrences(of: "/jobctl_reach", with: "/jobctl_nothere")
            var started = ContinuousClock.now
            let noDatabase = try await Jobctl.run(["list", "--db", missing])
            #expect(noDatabase.status == 1)
            #expect(noDatabase.stderr.contains("cannot be reached: database \"jobctl_nothere"), "\(noDatabase.stderr)")
            #expect(ContinuousClock.now - started < .seconds(10), "the server's refusal is final")

            // Nothing listening: the pool keeps trying for 15 s, then the command says why.
            // (Port 1, tcpmux, is privileged and unused.)
            started = ContinuousClock.now
            let refused = try await Jobctl.run(["list", "--db", "postgres://postgres@127.0.0.1:1/jobs?sslmode=disable"])
            #expect(refused.status == 1)
            #expect(
                refused.stderr.contains("cannot be reached: connection refused (is PostgreSQL running"),
                "\(refused.stderr)"
            )
            #expect(ContinuousClock.now - started < .seconds(40))
            #expect(!refused.stderr.contains("Connection creation failed"), "the pool's own retries are not shown")
        }
    }
}
