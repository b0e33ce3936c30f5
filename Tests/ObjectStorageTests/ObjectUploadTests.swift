import Foundation
import MediaTestKit
import ObjectStorage
import Synchronization
import Testing

/// `ObjectUpload`, the worker's way of publishing a file to `s3://`, against SeaweedFS: a
/// single PUT and a multipart upload, each publishing right after its lease check and only if
/// the key still holds what it held when the upload began.
@Suite("Object uploads against SeaweedFS", .serialized, .timeLimit(.minutes(3)))
struct ObjectUploadTests {
    typealias Client = S3ClientTests

    /// A confirmation that counts its calls and, on the first, lets "another worker" write the
    /// key first (the upload's condition then fails, and it must confirm again and win).
    final class Interloper: Sendable {
        let calls = Atomic(0)
        let client: S3Client
        let location: S3Location
        let other: String?

        init(client: S3Client, location: S3Location, other: String?) {
            self.client = client
            self.location = location
            self.other = other
        }

        func confirm() async -> Bool {
            if calls.add(1, ordering: .relaxed).newValue == 1, let other {
                let (client, location) = (client, location)
                _ = try? await onThread { try client.putObject(file: other, to: location, contentType: nil) }
            }
            return true
        }
    }

    /// Files from 6 MiB go up in parts of 5 MiB here (S3's smallest part but the last;
    /// SeaweedFS refuses smaller ones too, `EntityTooSmall`).
    static let threshold: Int64 = 6 << 20

    static func upload(
        _ path: String,
        to location: S3Location,
        client: S3Client,
        confirm: @escaping @Sendable () async -> Bool
    ) -> ObjectUpload {
        ObjectUpload(
            client: client,
            file: path,
            location: location,
            contentType: "video/mp4",
            metadata: ["jobctl-attempt": "7"],
            confirm: confirm,
            threshold: threshold,
            partSize: 5 << 20
        )
    }

    @Test("a single PUT: another writer first, then this one confirms again and publishes over it")
    func singlePutWinsAfterConfirmingAgain() async throws {
        try await withTemporaryDirectory("upload-put") { directory in
            let client = try Client.client()
            let location = S3Location(bucket: Client.bucket, key: "upload/\(Client.unique)/put.mp4")
            let mine = try Client.file(directory, "mine.bin", bytes: 10_000, seed: 3)
            let theirs = try Client.file(directory, "theirs.bin", bytes: 9_000, seed: 4)
            let interloper = Interloper(client: client, location: location, other: theirs)
            let outcome = await Self.upload(mine, to: location, client: client, confirm: interloper.confirm).run()
            guard case .uploaded(let bytes) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(bytes == 10_000 && interloper.calls.load(ordering: .relaxed) == 2)
            let info = try #require(try await onThread { try client.head(location) })
            #expect(info.etag == (try FileDigest.of(mine)).md5 && info.metadata["jobctl-attempt"] == "7")
        }
    }

    @Test("multipart: another writer before the completion loses too; parts checked, nothing left over")
    func multipartWinsAfterConfirmingAgain() async throws {
        try await withTemporaryDirectory("upload-multipart") { directory in
            let client = try Client.client()
            let location = S3Location(bucket: Client.bucket, key: "upload/\(Client.unique)/multi.mp4")
            let size = Int(Self.threshold) + 5_500_000
            let mine = try Client.file(directory, "mine.bin", bytes: size, seed: 5)
            let theirs = try Client.file(directory, "theirs.bin", bytes: 1_000, seed: 6)
            let interloper = Interloper(client: client, location: location, other: theirs)
            let outcome = await Self.upload(mine, to: location, client: client, confirm: interloper.confirm).run()
            guard case .uploaded = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(interloper.calls.load(ordering: .relaxed) == 2, "the condition did not fail once")
            let info = try #require(try await onThread { try client.head(location) })
            #expect(info.size == Int64(size))
            let plan = MultipartPlan(size: Int64(size), partSize: 5 << 20)
            #expect(plan.partCount == 3)
            #expect(info.etag.hasSuffix("-\(plan.partCount)"), "\(info.etag)")
            let uploads = try await onThread {
                try client.listMultipartUploads(bucket: Client.bucket, prefix: "upload/")
            }
            #expect(uploads.isEmpty, "\(uploads)")
        }
    }

    @Test("a lease found lost before publishing: nothing published, the multipart upload aborted")
    func lostLeasePublishesNothing() async throws {
        try await withTemporaryDirectory("upload-lost") { directory in
            let client = try Client.client()
            for (name, size) in [("small", 5_000), ("large", Int(Self.threshold) + 1_000)] {
                let location = S3Location(bucket: Client.bucket, key: "lost/\(Client.unique)/\(name).mp4")
                let path = try Client.file(directory, "\(name).bin", bytes: size)
                let outcome = await Self.upload(path, to: location, client: client, confirm: { false }).run()
                guard case .stopped = outcome else {
                    Issue.record("\(name): \(outcome)")
                    continue
                }
                #expect(try await onThread { try client.head(location) } == nil, "\(name) was published")
            }
            let uploads = try await onThread { try client.listMultipartUploads(bucket: Client.bucket, prefix: "lost/") }
            #expect(uploads.isEmpty, "\(uploads)")
        }
    }
}
