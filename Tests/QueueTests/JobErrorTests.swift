import Foundation
import JobctlCore
import Queue
import Testing

@Suite("JobError and the error-code vocabulary")
struct JobErrorTests {
    @Test(
        "retried: output, lease and internal errors",
        arguments: [ErrorCode.outputUnwritable, .leaseLost, .internalError]
    )
    func retryable(_ code: ErrorCode) {
        #expect(code.isRetryable)
        #expect(JobError(code: code, message: "m").retryable)
        #expect(JobError(code: code, message: "m", retryable: false).retryable == false, "an explicit flag wins")
    }

    @Test(
        "not retried: input, range, preset, decode, limit and poison errors",
        arguments: [
            ErrorCode.inputNotFound, .inputUnreadable, .inputUnsupported, .rangeOutOfBounds, .presetUnknown,
            .decodeFailed, .limitExceeded, .workerCrashed, .databaseCorrupt,
        ]
    )
    func notRetryable(_ code: ErrorCode) {
        #expect(code.isRetryable == false)
        #expect(JobError(code: code, message: "m").retryable == false)
        #expect(JobError(code: code, message: "m", retryable: true).retryable, "an explicit flag wins")
    }

    @Test("description is code: message")
    func description() {
        #expect(
            JobError(code: .inputNotFound, message: "/data/in.mov does not exist").description
                == "input_not_found: /data/in.mov does not exist"
        )
    }

    @Test("a code is stored and sent as its string; one this version does not know still reads, as final")
    func wireForm() throws {
        let error = JobError(code: .leaseLost, message: "m")
        let json = String(decoding: try JSONEncoder().encode(error), as: UTF8.self)
        #expect(json.contains(#""code":"lease_lost""#), "\(json)")
        let unknown = try JSONDecoder().decode(
            JobError.self,
            from: Data(#"{"code":"from_the_future","message":"m","retryable":false}"#.utf8)
        )
        #expect(unknown.code.rawValue == "from_the_future")
        #expect(unknown.code.isRetryable == false && unknown.code.httpStatus == 500 && unknown.code.exitCode == 1)
    }

    /// Every code, and where it is produced (a file that names it). The test fails when a code
    /// is added to the vocabulary without a line here, when the file no longer produces it, or
    /// when the docs do not list it.
    static let producers: [ErrorCode: String] = [
        .inputNotFound: "Sources/Media/Asset/Asset.swift",
        .inputUnreadable: "Sources/Media/FFmpeg/InputGuard.swift",
        .inputUnsupported: "Sources/Media/Asset/LocalManifest.swift",
        .rangeOutOfBounds: "Sources/Media/Time/TimeRange.swift",
        .presetUnknown: "Sources/Media/Presets/PresetCatalog.swift",
        .presetIncompatible: "Sources/Media/Export/ExportPlan.swift",
        .outputUnwritable: "Sources/Media/Writer/AssetWriter.swift",
        .outputForbidden: "Sources/Media/Writer/OutputDestination.swift",
        .decodeFailed: "Sources/Media/Reader/AudioDecodePipeline.swift",
        .encodeFailed: "Sources/Media/Writer/WriterEngines.swift",
        .limitExceeded: "Sources/Media/Support/ResourceLimits.swift",
        .invalidRequest: "Sources/JobAPI/JobRoutes.swift",
        .leaseLost: "Sources/Queue/JobStoreError.swift",
        .workerCrashed: "Sources/Queue/JobStoreError.swift",
        .webhookForbidden: "Sources/JobKinds/Submission/Submission+Locations.swift",
        .databaseCorrupt: "Sources/JobKinds/Running/PreparedJob.swift",
        .internalError: "Sources/Worker/Attempts.swift",
        .cancelled: "Sources/Media/Export/ExportSession.swift",
        .usage: "Sources/CommandLineSupport/CommandFailure.swift",
        .notFound: "Sources/Queue/JobStoreError.swift",
        .conflict: "Sources/Queue/JobStoreError.swift",
        .databaseUnavailable: "Sources/JobAPI/APIError.swift",
        .keyNotFound: "Sources/jobctl/KeysCommand.swift",
        .tlsInvalid: "Sources/jobctl/ServeCommand.swift",
        .listenFailed: "Sources/jobctl/ServeCommand.swift",
        .unauthorized: "Sources/JobAPI/APIError.swift",
        .forbidden: "Sources/JobAPI/JobRoutes.swift",
        .jobNotFound: "Sources/JobAPI/APIError.swift",
        .deliveryNotFound: "Sources/JobAPI/JobRoutes+Deliveries.swift",
        .methodNotAllowed: "Sources/JobAPI/APIMiddleware.swift",
        .requestTimeout: "Sources/JobAPI/RequestLimits.swift",
        .jobEnded: "Sources/JobAPI/JobRoutes.swift",
        .jobNotRetryable: "Sources/JobAPI/JobRoutes.swift",
        .deliveryInFlight: "Sources/JobAPI/JobRoutes+Deliveries.swift",
        .idempotencyKeyReused: "Sources/JobAPI/JobRoutes.swift",
        .rateLimited: "Sources/JobAPI/APIError.swift",
        .tooManyWatches: "Sources/JobAPI/APIError.swift",
    ]

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("every code has a producer that names it, and the docs list it")
    func everyCodeIsProducedAndDocumented() throws {
        #expect(Set(Self.producers.keys) == Set(ErrorCode.vocabulary.keys))
        let docs = try ["docs/cli.md", "docs/api.md", "docs/spec.md"].map {
            try String(contentsOf: Self.root.appendingPathComponent($0), encoding: .utf8)
        }.joined()
        for (code, file) in Self.producers.sorted(by: { $0.key < $1.key }) {
            let source = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            let name = Self.constantName(code)
            // Media and store codes are their own types' members with the same names.
            #expect(
                source.contains(".\(name)") || source.contains("\"\(code.rawValue)\""),
                "\(code) is not produced in \(file)"
            )
            #expect(docs.contains("`\(code.rawValue)`"), "\(code) is not in docs/cli.md, api.md or spec.md")
        }
    }

    /// `input_not_found` → `inputNotFound`; `internal` → `internalError`.
    static func constantName(_ code: ErrorCode) -> String {
        if code == .internalError { return "internalError" }
        let words = code.rawValue.split(separator: "_")
        return String(words[0]) + words.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }

    // `MediaError`, `JobStoreError` and `JobError` carry an `ErrorCode`: that they say only
    // codes of the vocabulary is the compiler's to check, save a code made from a string,
    // which only reading a stored one may do (the last test).

    /// docs/spec.md §4's table of codes: code → (retryable, exit, HTTP).
    static func specTable() throws -> [String: (retryable: Bool, exit: Int32, http: Int)] {
        let spec = try String(contentsOf: root.appendingPathComponent("docs/spec.md"), encoding: .utf8)
        let section = try #require(spec.components(separatedBy: "**Error codes**").dropFirst().first)
        let row = /\| `([a-z_]+)` \| (yes|no) \| (\d+) \| (\d+) \|/
        var table: [String: (retryable: Bool, exit: Int32, http: Int)] = [:]
        for line in section.components(separatedBy: "**Retries**")[0].split(separator: "\n") {
            guard let match = try row.wholeMatch(in: line) else { continue }
            #expect(table[String(match.1)] == nil, "\(match.1) is in the table twice")
            table[String(match.1)] = (match.2 == "yes", try #require(Int32(match.3)), try #require(Int(match.4)))
        }
        return table
    }

    @Test("every code's retry, exit status and HTTP status are docs/spec.md §4's table's")
    func statusesAreTheSpecTable() throws {
        let table = try Self.specTable()
        #expect(Set(table.keys) == Set(ErrorCode.vocabulary.keys.map(\.rawValue)))
        for code in ErrorCode.vocabulary.keys.sorted() {
            let documented = try #require(table[code.rawValue], "\(code) is not in docs/spec.md §4's table")
            #expect(code.isRetryable == documented.retryable, "\(code): retryable")
            #expect(code.exitCode == documented.exit, "\(code): exit status")
            #expect(code.httpStatus == documented.http, "\(code): HTTP status")
        }
    }

    @Test("a code is made from a string only where a stored one is read back")
    func noStringBridges() throws {
        let readers: Set = [
            "Sources/JobctlCore/ErrorCode.swift", "Sources/Queue/StoredRow.swift",
            "Sources/QueueSQLite/SQLiteJobStore+Graphs.swift",
        ]
        let sources = try #require(
            FileManager.default.enumerator(atPath: Self.root.appendingPathComponent("Sources").path)
        )
        for case let path as String in sources where path.hasSuffix(".swift") {
            let file = "Sources/" + path
            let text = try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8)
            #expect(
                readers.contains(file) || !text.contains(/\bErrorCode\(rawValue:/),
                "\(file) makes an ErrorCode from a string: use the vocabulary's member"
            )
        }
    }
}
