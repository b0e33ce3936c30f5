import JobctlCore
import Queue
import SafeHTTP
import Testing

/// Every error of the store and the HTTP client has the one shape: a code, a message, the
/// cause underneath and where it was made; the CLI's line is `code: message`.
@Suite("One error shape")
struct ErrorShapeTests {
    struct DriverError: Error, CustomStringConvertible { var description: String { "connection reset by peer" } }

    @Test("JobStoreError: code and message, the conflict's status, the cause and location in debugDescription")
    func jobStoreError() {
        let conflict = JobStoreError(
            .conflict,
            "job x has already ended (completed); nothing to cancel",
            status: .completed
        )
        #expect(conflict.description == "conflict: job x has already ended (completed); nothing to cancel")
        #expect(conflict.status == .completed)

        let line = #line + 1
        let failed = JobStoreError(.databaseUnavailable, "the job database failed", cause: DriverError())
        #expect(failed.location.line == line)
        #expect(failed.location.file.hasSuffix("ErrorShapeTests.swift"))
        #expect(failed.debugDescription.contains("ErrorShapeTests.swift:\(line)"), "\(failed.debugDescription)")
        #expect(failed.debugDescription.contains("caused by connection reset by peer"), "\(failed.debugDescription)")
    }

    @Test("HTTPResponse: why a request failed is an HTTPError, not flags and a string")
    func httpError() {
        let refused = HTTPResponse(
            latency: .zero,
            failure: HTTPError(.refused, "refused: hooks.example resolves to 10.0.0.1")
        )
        #expect(refused.failed(with: .refused))
        #expect(!refused.failed(with: .transport))
        #expect(refused.failure?.message == "refused: hooks.example resolves to 10.0.0.1")
        #expect(refused.failure?.description == "refused: refused: hooks.example resolves to 10.0.0.1")
        let ok = HTTPResponse(statusCode: 204, latency: .milliseconds(3))
        #expect(ok.succeeded && ok.failure == nil)
        #expect(HTTPResponse.notSent("no thread").failed(with: .notSent))
    }
}
