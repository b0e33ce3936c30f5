import Foundation
import MediaTestKit
import SafeHTTP
import Testing

@testable import ObjectStorage

/// A store that answers and then stalls (scripts/stalled-store.py: its PUTs are never read or
/// answered): each try waits out the stall limit, so a stall earns one retry, not three (a
/// wedged store tied a worker up 4.3 minutes an attempt, issue 42).
@Suite("An object store that stalls", .timeLimit(.minutes(2)))
struct StalledStoreTests {
    static func client(_ server: HelperServer) throws -> S3Client {
        let credentials = try CredentialChain(
            environment: [
                "AWS_ACCESS_KEY_ID": "stalled", "AWS_SECRET_ACCESS_KEY": "stalled-secret",
                "AWS_EC2_METADATA_DISABLED": "true",
            ],
            files: SharedConfigFiles(settings: [:], profile: "default")
        )
        // A stall limit of a second here; the worker's is `S3Client.stallLimit`.
        let sender = HTTPSender(
            policy: AddressPolicy(allowPrivate: true),
            timeout: .seconds(10),
            connectTimeout: .seconds(5),
            stallLimit: (1024, .seconds(1)),
            responseLimit: 1 << 20
        )
        return S3Client(
            configuration: S3Configuration(
                region: "us-east-1",
                endpoint: S3Configuration.Endpoint(scheme: "http", host: "127.0.0.1:\(server.port)")
            ),
            credentials: credentials,
            sender: sender
        )
    }

    @Test("a multipart upload's stalled parts are tried twice each, then the upload fails as a stall")
    func stalledParts() async throws {
        try await withTemporaryDirectory("stalled") { directory in
            let server = try await HelperServer(script: "stalled-store.py", directory, name: "store", [])
            defer { server.stop() }
            let file = directory.file("big.bin")
            try Data(count: 11 << 20).write(to: URL(fileURLWithPath: file))
            let upload = ObjectUpload(
                client: try Self.client(server),
                file: file,
                location: try S3Location.parse("s3://bucket/out/big.bin").get(),
                contentType: "application/octet-stream",
                threshold: 6 << 20,
                partSize: 5 << 20
            )
            let outcome = await upload.run()
            guard case .failed(let error) = outcome else {
                Issue.record("the upload did not fail: \(outcome)")
                return
            }
            #expect(error.isTransient && error.stalled, "\(error)")
            // Three parts (5, 5 and 1 MiB), each tried at most twice.
            let puts = server.records().filter { $0["method"] as? String == "PUT" }
            var tries: [String: Int] = [:]
            for put in puts {
                let query = (put["path"] as? String ?? "").split(separator: "?").last.map(String.init) ?? ""
                let number = query.split(separator: "&").first { $0.hasPrefix("partNumber=") } ?? "?"
                tries[String(number), default: 0] += 1
            }
            #expect(!tries.isEmpty && tries.values.allSatisfy { $0 <= 2 }, "\(tries)")
            #expect(S3Client.stallLimit.time <= .seconds(15), "the worker's stall limit")
        }
    }
}
