import Foundation
import JobKinds
import JobctlCore
import Logging
import Media
import ObjectStorage
import Queue
import SafeHTTP
import Synchronization
import Testing

@testable import Worker

/// The one publisher of a job's outputs: chosen once from where they go, the order a set goes
/// out in, and the one retry decision over both remote transports' failures (milliseconds: no
/// network, no store).
@Suite("Output publisher")
struct OutputPublisherTests {
    static let delays: [Duration] = [.seconds(1), .seconds(4), .seconds(15)]
    static let url = "https://example.com/out.mp4"
    static let object = "s3://bucket/out.mp4"

    /// What a row expects of the decision.
    enum Expected: Sendable, CustomTestStringConvertible {
        case published(Int64)
        case retry(after: Duration)
        case failed(ErrorCode, retryable: Bool, saying: String)
        case stopped

        var testDescription: String {
            switch self {
            case .published(let bytes): "published \(bytes) bytes"
            case .retry(let delay): "retry after \(delay)"
            case .failed(let code, let retryable, _): "failed \(code)\(retryable ? ", retryable" : "")"
            case .stopped: "stopped"
            }
        }
    }

    /// One send's result on a try, and what the decision must make of it.
    struct Row: Sendable, CustomTestStringConvertible {
        let label: String
        let result: SendResult
        let tries: Int
        let expected: Expected
        var testDescription: String { "\(label) (try \(tries + 1)) → \(expected.testDescription)" }
    }

    static func http(_ status: Int?, retryAfter: Duration? = nil, failure: HTTPError? = nil) -> HTTPResponse {
        HTTPResponse(statusCode: status, retryAfter: retryAfter, latency: .milliseconds(5), failure: failure)
    }

    static func put(_ response: HTTPResponse) -> SendResult { OutputPublisher.result(of: response, url: url) }

    static func store(_ outcome: ObjectUpload.Outcome) -> SendResult {
        OutputPublisher.result(of: outcome, url: object)
    }

    static var stalledPut: HTTPResponse {
        var response = http(nil, failure: HTTPError(.transport, "Operation too slow"))
        response.timedOut = true
        return response
    }

    static var stalledStore: S3Error {
        var error = S3Error(.transient, "s3://bucket/out.mp4: no bytes moved for 60 s")
        error.stalled = true
        return error
    }

    static var uploaded: HTTPResponse {
        var response = http(200)
        response.uploaded = 1234
        return response
    }

    static let rows: [Row] = [
        // HTTP PUT
        Row(label: "PUT 200", result: put(uploaded), tries: 0, expected: .published(1234)),
        Row(label: "PUT 503", result: put(http(503)), tries: 0, expected: .retry(after: .seconds(1))),
        Row(label: "PUT 500", result: put(http(500)), tries: 2, expected: .retry(after: .seconds(15))),
        Row(label: "PUT 408", result: put(http(408)), tries: 1, expected: .retry(after: .seconds(4))),
        Row(
            label: "PUT 429, Retry-After 30 s",
            result: put(http(429, retryAfter: .seconds(30))),
            tries: 0,
            expected: .retry(after: .seconds(30))
        ),
        Row(
            label: "PUT 503, Retry-After 10 min",
            result: put(http(503, retryAfter: .seconds(600))),
            tries: 0,
            expected: .retry(after: .seconds(60))
        ),
        Row(
            label: "PUT 503, Retry-After shorter than the delay",
            result: put(http(503, retryAfter: .seconds(2))),
            tries: 2,
            expected: .retry(after: .seconds(15))
        ),
        Row(
            label: "PUT reset",
            result: put(http(nil, failure: HTTPError(.transport, "Connection reset"))),
            tries: 2,
            expected: .retry(after: .seconds(15))
        ),
        Row(
            label: "PUT 503, retries spent",
            result: put(http(503)),
            tries: 3,
            expected: .failed(.outputUnwritable, retryable: true, saying: "failed 4 times (last: HTTP 503)")
        ),
        Row(label: "PUT stalled", result: put(stalledPut), tries: 0, expected: .retry(after: .seconds(1))),
        Row(
            label: "PUT stalled again",
            result: put(stalledPut),
            tries: 1,
            expected: .failed(.outputUnwritable, retryable: true, saying: "failed 2 times (last: Operation too slow)")
        ),
        Row(
            label: "PUT 403",
            result: put(http(403)),
            tries: 0,
            expected: .failed(.outputUnwritable, retryable: false, saying: "failed (HTTP 403)")
        ),
        Row(
            label: "PUT 404",
            result: put(http(404)),
            tries: 1,
            expected: .failed(.outputUnwritable, retryable: false, saying: "failed (HTTP 404)")
        ),
        Row(
            label: "PUT to a refused address",
            result: put(http(nil, failure: HTTPError(.refused, "127.0.0.1 is a loopback address"))),
            tries: 0,
            expected: .failed(.outputForbidden, retryable: false, saying: "--allow-private-webhooks")
        ),
        Row(
            label: "PUT with an untrusted certificate",
            result: put(http(nil, failure: HTTPError(.certificateRejected, "self-signed certificate"))),
            tries: 0,
            expected: .failed(.outputUnwritable, retryable: false, saying: "self-signed certificate")
        ),
        Row(
            label: "PUT stopped",
            result: put(http(nil, failure: HTTPError(.aborted, "stopped"))),
            tries: 1,
            expected: .stopped
        ),
        // The object store
        Row(label: "object stored", result: store(.uploaded(bytes: 99)), tries: 0, expected: .published(99)),
        Row(
            label: "store SlowDown",
            result: store(.failed(S3Error(.transient, "SlowDown"))),
            tries: 0,
            expected: .retry(after: .seconds(1))
        ),
        Row(
            label: "store 500",
            result: store(.failed(S3Error(.transient, "InternalError"))),
            tries: 2,
            expected: .retry(after: .seconds(15))
        ),
        Row(
            label: "store 500, retries spent",
            result: store(.failed(S3Error(.transient, "InternalError"))),
            tries: 3,
            expected: .failed(.outputUnwritable, retryable: true, saying: "s3://bucket/out.mp4 failed: InternalError")
        ),
        Row(
            label: "store stalled",
            result: store(.failed(stalledStore)),
            tries: 0,
            expected: .retry(after: .seconds(1))
        ),
        Row(
            label: "store stalled again",
            result: store(.failed(stalledStore)),
            tries: 1,
            expected: .failed(.outputUnwritable, retryable: true, saying: "no bytes moved")
        ),
        Row(
            label: "store AccessDenied",
            result: store(.failed(S3Error(.denied, "AccessDenied"))),
            tries: 0,
            expected: .failed(.outputUnwritable, retryable: false, saying: "failed: AccessDenied")
        ),
        Row(
            label: "store without credentials",
            result: store(.failed(S3Error(.credentials, "no credentials"))),
            tries: 0,
            expected: .failed(.outputUnwritable, retryable: true, saying: "no credentials")
        ),
        Row(label: "store stopped", result: store(.stopped), tries: 0, expected: .stopped),
    ]

    @Test("one retry decision for both transports", arguments: rows)
    func decision(_ row: Row) {
        let outcome = OutputPublisher.outcome(of: row.result, tries: row.tries, retryDelays: Self.delays)
        switch (outcome, row.expected) {
        case (.published(let bytes), .published(let expected)):
            #expect(bytes == expected)
        case (.retry(let delay, _), .retry(let expected)):
            #expect(delay == expected)
        case (.failed(let error), .failed(let code, let retryable, let saying)):
            #expect(error.code == code)
            #expect(error.retryable == retryable)
            #expect(error.message.contains(saying), "\(error.message)")
        case (.stopped, .stopped):
            break
        default:
            Issue.record("\(outcome), expected \(row.expected.testDescription)")
        }
    }

    @Test("without retry delays a transient failure fails at once, a stalled one too")
    func noRetryDelays() {
        for result in [Self.put(Self.http(503)), Self.put(Self.stalledPut), Self.store(.failed(Self.stalledStore))] {
            guard case .failed(let error) = OutputPublisher.outcome(of: result, tries: 0, retryDelays: []) else {
                Issue.record("retried without delays")
                continue
            }
            #expect(error.code == .outputUnwritable && error.retryable)
        }
    }

    @Test("the publisher is chosen from where the outputs go, with the configured object store")
    func choice() {
        let provider = S3ClientProvider { () throws(S3Error) in throw S3Error(.configuration, "unused") }
        func publisher(_ location: String?) -> OutputPublisher {
            OutputPublisher(
                for: location,
                sender: HTTPSender(policy: AddressPolicy()),
                objectStore: provider,
                retryDelays: Self.delays
            )
        }
        guard case .rename = publisher(nil).transport else {
            Issue.record("a local output is not renamed")
            return
        }
        #expect(publisher(nil).delivery == .rename)
        for url in ["https://example.com/out/{name}", "HTTP://example.com/out.mp4"] {
            guard case .httpPut = publisher(url).transport else {
                Issue.record("\(url) is not PUT")
                continue
            }
            #expect(publisher(url).delivery == .upload)
        }
        for url in ["s3://bucket/out.mp4", "S3://bucket/thumbs/{name}"] {
            guard case .objectStore(let chosen) = publisher(url).transport else {
                Issue.record("\(url) is not written to the object store")
                continue
            }
            #expect(chosen === provider, "the worker's provider, not one of its own")
            #expect(publisher(url).delivery == .upload)
        }
    }

    @Test("a set goes out by rank: master.m3u8 last even when listed first")
    func order() {
        func file(_ name: String, _ rank: StagedFiles.PublishRank) -> HeldUpload {
            HeldUpload(name: name, path: "/staging/\(name)", url: "s3://b/hls/\(name)", contentType: "", rank: rank)
        }
        let listed = [
            file("master.m3u8", .entryPoint), file("720p.m3u8", .index), file("720p-00001.m4s", .content),
            file("manifest.mpd", .entryPoint), file("480p.m3u8", .index), file("480p-00001.m4s", .content),
        ]
        #expect(
            OutputPublisher.ordered(listed).map(\.name) == [
                "720p-00001.m4s", "480p-00001.m4s", "720p.m3u8", "480p.m3u8", "master.m3u8", "manifest.mpd",
            ]
        )
    }

    @Test("an object store file is sent with the client of the configured provider")
    func injectedProvider() async {
        let asked = Mutex(0)
        let provider = S3ClientProvider { () throws(S3Error) in
            asked.withLock { $0 += 1 }
            throw S3Error(.denied, "the test's store refuses (InvalidAccessKeyId)")
        }
        let publisher = OutputPublisher(
            for: Self.object,
            sender: HTTPSender(policy: AddressPolicy()),
            objectStore: provider,
            retryDelays: Self.delays
        )
        let attempt = PublishingAttempt(
            lease: Lease(jobID: JobID("job-1"), token: "token", attempt: 1, worker: "test"),
            shouldStop: { false },
            confirm: { true },
            journal: UploadJournal(recorded: { _ in nil }, record: { _, _ in true }),
            logger: Logger(label: "test")
        )
        let file = HeldUpload(name: "", path: "/nonexistent", url: Self.object, contentType: "video/mp4")
        guard case .failed(let error) = await publisher.send(file, tries: 0, for: attempt) else {
            Issue.record("sent without a client")
            return
        }
        #expect(asked.withLock { $0 } == 1)
        #expect(error.code == .outputUnwritable && !error.retryable)
        #expect(error.message.contains("InvalidAccessKeyId"), "\(error.message)")
    }
}
