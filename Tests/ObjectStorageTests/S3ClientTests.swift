import Foundation
import MediaTestKit
import ObjectStorage
import SafeHTTP
import Testing

/// The S3 operations against a real object store: SeaweedFS's S3 gateway on loopback, which
/// checks every signature (scripts/test-s3.sh, started by `make test`). curl's own SigV4
/// (`--aws-sigv4`) is the independent client that checks what ours wrote.
@Suite("S3 client against SeaweedFS", .serialized, .timeLimit(.minutes(3)))
struct S3ClientTests {
    static let bucket = "jobctl-test"
    /// Lowercase and unique to this run (SeaweedFS makes a bucket on a first PUT into it).
    static let unique = UUID().uuidString.prefix(8).lowercased()

    /// The environment `scripts/test-s3.sh run` sets; the test fails, never skips, without it.
    static func environment() throws -> [String: String] {
        let environment = ProcessInfo.processInfo.environment
        guard environment["JOBCTL_TEST_S3"] != nil else {
            throw TestS3Missing()
        }
        return environment
    }

    struct TestS3Missing: Error, CustomStringConvertible {
        var description: String {
            "no object store for the tests: run them through `scripts/test-s3.sh run swift test …` (make test does)"
        }
    }

    static func client(_ changes: [String: String] = [:]) throws -> S3Client {
        var environment = try environment()
        environment.merge(changes) { _, new in new }
        return try S3Client.fromEnvironment(environment, home: "/nonexistent")
    }

    /// An object's bytes as curl fetches them with its own signature.
    static func curlGet(_ key: String) async throws -> (status: Int32, body: Data) {
        let environment = try environment()
        let result = try await ProcessRunner.run(
            "curl",
            [
                "-s", "-f", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                "\(environment["AWS_ACCESS_KEY_ID"]!):\(environment["AWS_SECRET_ACCESS_KEY"]!)",
                "\(environment["JOBCTL_TEST_S3"]!)/\(bucket)/\(key)",
            ]
        )
        return (result.status, result.stdout)
    }

    static func file(_ directory: TemporaryDirectory, _ name: String, bytes: Int, seed: UInt8 = 7) throws -> String {
        let path = directory.file(name)
        var data = Data(count: bytes)
        data.withUnsafeMutableBytes { buffer in
            var value = UInt32(seed) &* 2_654_435_761
            for index in buffer.indices {
                value = value &* 1_103_515_245 &+ 12345
                buffer[index] = UInt8(truncatingIfNeeded: value >> 16)
            }
        }
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("PUT, HEAD, GET and DELETE of an object with an awkward key, checked by curl")
    func objectRoundTrip() async throws {
        try await withTemporaryDirectory("s3-object") { directory in
            let client = try Self.client()
            let key = "round trip/ü &+=$@ (1).bin"
            let location = S3Location(bucket: Self.bucket, key: key)
            let path = try Self.file(directory, "object.bin", bytes: 300_001)
            let etag = try await onThread { try client.putObject(file: path, to: location, contentType: "video/mp4") }
            let expected = try FileDigest.of(path)
            #expect(etag == expected.md5)
            let info = try await onThread { try client.head(location) }
            var stored = S3Client.ObjectInfo(size: 300_001, etag: expected.md5)
            stored.contentType = "video/mp4"
            #expect(info == stored)
            let fetched = try await Self.curlGet(SigV4.encode(key, keepingSlashes: true))
            #expect(fetched.status == 0 && fetched.body == FileManager.default.contents(atPath: path))
            let range = try await onThread { try client.get(location, range: 10...19) }
            #expect(range == FileManager.default.contents(atPath: path)?.subdata(in: 10..<20))
            // A download streams the object into a file (larger than the client's 4 MiB limit on
            // bodies held in memory, so none of it is cut); a missing key leaves its error's body out.
            let large = try Self.file(directory, "large.bin", bytes: 5 << 20, seed: 9)
            let big = S3Location(bucket: Self.bucket, key: "round trip/large.bin")
            _ = try await onThread { try client.putObject(file: large, to: big, contentType: nil) }
            let into = directory.file("downloaded.bin")
            #expect(try await onThread { try client.download(big, to: into) } == 5 << 20)
            #expect(try FileDigest.of(into) == (try FileDigest.of(large)))
            await #expect(throws: S3Error.self) {
                try await onThread { try client.download(S3Location(bucket: Self.bucket, key: "nothing"), to: into) }
            }
            #expect(FileManager.default.contents(atPath: into)?.isEmpty == true, "an error's XML was written")
            try await onThread { try client.deleteObject(big) }
            let listed = try await onThread { try client.listObjects(bucket: Self.bucket, prefix: "round trip/") }
            #expect(listed.map(\.key) == [key])
            try await onThread { try client.deleteObject(location) }
            #expect(try await onThread { try client.head(location) } == nil)
        }
    }

    @Test("a wrong secret, a missing key, a missing bucket and a read-only identity: errors with the store's code")
    func refusals() async throws {
        try await withTemporaryDirectory("s3-refusals") { directory in
            let path = try Self.file(directory, "small.bin", bytes: 1000)
            let location = S3Location(bucket: Self.bucket, key: "refusals/small.bin")
            let wrong = try Self.client(["AWS_SECRET_ACCESS_KEY": "not-the-secret"])
            await #expect {
                try await onThread { try wrong.putObject(file: path, to: location, contentType: nil) }
            } throws: { error in
                guard let error = error as? S3Error else { return false }
                return error.code == .denied && error.storeCode == "SignatureDoesNotMatch"
                    && !error.message.contains("not-the-secret")
            }
            let client = try Self.client()
            await #expect {
                try await onThread { try client.get(S3Location(bucket: Self.bucket, key: "refusals/none")) }
            } throws: { error in
                (error as? S3Error)?.code == .notFound && "\(error)".contains("NoSuchKey")
            }
            await #expect {
                try await onThread { try client.get(S3Location(bucket: "no-bucket-\(Self.unique)", key: "k")) }
            } throws: { error in
                (error as? S3Error)?.code == .notFound && "\(error)".contains("NoSuchBucket")
            }
            let environment = try Self.environment()
            let reader = try Self.client([
                "AWS_ACCESS_KEY_ID": environment["JOBCTL_TEST_S3_READER_KEY"]!,
                "AWS_SECRET_ACCESS_KEY": environment["JOBCTL_TEST_S3_READER_SECRET"]!,
            ])
            await #expect {
                try await onThread { try reader.putObject(file: path, to: location, contentType: nil) }
            } throws: { error in
                (error as? S3Error)?.code == .denied && "\(error)".contains("AccessDenied")
            }
        }
    }

    @Test("conditional writes: If-None-Match loses to an existing object, If-Match to a changed one")
    func conditionalWrites() async throws {
        try await withTemporaryDirectory("s3-conditions") { directory in
            let client = try Self.client()
            let location = S3Location(bucket: Self.bucket, key: "conditions/out.mp4")
            try await onThread { try client.deleteObject(location) }
            let first = try Self.file(directory, "first.bin", bytes: 5000, seed: 1)
            let second = try Self.file(directory, "second.bin", bytes: 6000, seed: 2)
            let etag = try await onThread {
                try client.putObject(file: first, to: location, contentType: nil, condition: .absent)
            }
            await #expect {
                try await onThread {
                    try client.putObject(file: second, to: location, contentType: nil, condition: .absent)
                }
            } throws: { error in
                (error as? S3Error)?.code == .preconditionFailed
            }
            await #expect {
                try await onThread {
                    try client.putObject(
                        file: second,
                        to: location,
                        contentType: nil,
                        condition: .unchanged(etag: "0123456789abcdef0123456789abcdef")
                    )
                }
            } throws: { error in
                (error as? S3Error)?.code == .preconditionFailed
            }
            let replaced = try await onThread {
                try client.putObject(file: second, to: location, contentType: nil, condition: .unchanged(etag: etag))
            }
            #expect(try await onThread { try client.head(location) }?.etag == replaced)
            #expect(try await Self.curlGet("conditions/out.mp4").body == FileManager.default.contents(atPath: second))
        }
    }

    @Test("multipart: parts, a list of them, the assembled object's ETag, and an abort that leaves nothing")
    func multipart() async throws {
        try await withTemporaryDirectory("s3-multipart") { directory in
            let client = try Self.client()
            let location = S3Location(bucket: Self.bucket, key: "multipart/big.mp4")
            let size = 2 * Int(MultipartPlan.minimumPartSize) + 12_345
            let path = try Self.file(directory, "big.bin", bytes: size)
            let plan = MultipartPlan(size: Int64(size))
            #expect(plan.partCount == 3)
            let id = try await onThread { try client.createMultipartUpload(location, contentType: "video/mp4") }
            var parts: [UploadedPart] = []
            for number in 1...plan.partCount {
                parts.append(
                    try await onThread {
                        try client.uploadPart(
                            file: path,
                            range: plan.range(ofPart: number),
                            to: location,
                            uploadID: id,
                            number: number
                        )
                    }
                )
            }
            // As the store lists them: without the MD5 of the bytes sent, and the ETag that MD5.
            let uploaded = parts.map { UploadedPart(number: $0.number, etag: $0.etag, size: $0.size) }
            #expect(parts.allSatisfy { $0.etagIsLocalMD5 })
            let listed = try await onThread { try client.listParts(location, uploadID: id) }
            #expect(listed == uploaded, "\(listed) against \(uploaded)")
            let uploads = try await onThread {
                try client.listMultipartUploads(bucket: Self.bucket, prefix: "multipart/")
            }
            #expect(uploads.map(\.uploadID) == [id])
            let etag = try await onThread {
                try client.completeMultipartUpload(location, uploadID: id, parts: uploaded, condition: .none)
            }
            #expect(etag == MultipartPlan.etag(partMD5s: parts.map(\.etag)))
            #expect(try await Self.curlGet("multipart/big.mp4").body == FileManager.default.contents(atPath: path))
            #expect(
                try await onThread { try client.listMultipartUploads(bucket: Self.bucket, prefix: "multipart/") }
                    .isEmpty
            )

            // An upload abandoned half way: aborted, no parts remain.
            let other = try await onThread { try client.createMultipartUpload(location, contentType: nil) }
            _ = try await onThread {
                try client.uploadPart(
                    file: path,
                    range: plan.range(ofPart: 1),
                    to: location,
                    uploadID: other,
                    number: 1
                )
            }
            try await onThread { try client.abortMultipartUpload(location, uploadID: other) }
            #expect(
                try await onThread { try client.listMultipartUploads(bucket: Self.bucket, prefix: "multipart/") }
                    .isEmpty
            )
            // The finished object is untouched.
            #expect(try await onThread { try client.head(location) }?.etag == etag)
        }
    }

    @Test("a pre-signed URL reads the object without credentials; a tampered one is refused")
    func presigned() async throws {
        try await withTemporaryDirectory("s3-presigned") { directory in
            let client = try Self.client()
            let location = S3Location(bucket: Self.bucket, key: "presigned/clip one.mp4")
            let path = try Self.file(directory, "clip.bin", bytes: 4096)
            _ = try await onThread { try client.putObject(file: path, to: location, contentType: nil) }
            let url = try client.presignedURL(location, expires: 300)
            let fetched = try await ProcessRunner.run("curl", ["-s", "-f", url])
            #expect(fetched.status == 0 && fetched.stdout == FileManager.default.contents(atPath: path))
            let tampered = url.replacingOccurrences(of: "X-Amz-Expires=300", with: "X-Amz-Expires=301")
            #expect(try await ProcessRunner.run("curl", ["-s", "-f", tampered]).status != 0)
        }
    }
}
