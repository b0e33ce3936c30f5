import Foundation
import MediaTestKit
import ObjectStorage
import Synchronization
import Testing

/// A multipart upload recorded with its job and continued by the next attempt (issue 28),
/// against SeaweedFS: the parts the store holds whole are not sent again, and every way an
/// upload ends leaves nothing behind but what the job's record points to.
@Suite("Resumable uploads against SeaweedFS", .serialized, .timeLimit(.minutes(3)))
struct ObjectUploadResumeTests {
    typealias Client = S3ClientTests

    /// The job's record, as the worker's adapter over `upload_state` keeps it, with a lease
    /// that can be lost.
    final class Journal: Sendable {
        let records = Mutex<[UploadRecord]>([])
        let leaseHeld = Atomic(true)
        let resumed = Mutex<(kept: Int, parts: Int)?>(nil)
        /// Run when an upload is continued, before its parts are sent.
        let onResume = Mutex<(@Sendable () -> Void)?>(nil)

        var journal: UploadJournal {
            UploadJournal(
                recorded: { location in self.records.withLock { $0.first { $0.location == "\(location)" } } },
                record: { location, record in
                    guard self.leaseHeld.load(ordering: .relaxed) else { return false }
                    self.records.withLock { $0 = UploadJournal.replacing(location, with: record, in: $0) }
                    return true
                },
                resumed: { kept, parts in
                    self.resumed.withLock { $0 = (kept, parts) }
                    self.onResume.withLock { $0 }?()
                }
            )
        }
    }

    /// `ObjectUpload` in 5 MiB parts, one in flight per part, stopping once `stopAfter` parts
    /// are in the store.
    static func upload(
        _ path: String,
        to location: S3Location,
        client: S3Client,
        journal: Journal,
        stopAfter: Int? = nil,
        partSize: Int64 = 5 << 20
    ) -> ObjectUpload {
        let sent = Atomic(0)
        return ObjectUpload(
            client: client,
            file: path,
            location: location,
            contentType: "video/mp4",
            shouldStop: { stopAfter.map { sent.load(ordering: .relaxed) >= $0 } ?? false },
            partSent: { _ in sent.add(1, ordering: .relaxed) },
            threshold: 6 << 20,
            partSize: partSize,
            journal: journal.journal
        )
    }

    /// A client, this test's own prefix, and the key under it that the tests upload to.
    static func place(_ test: String) throws -> (S3Client, String, S3Location) {
        let prefix = "resume/\(Client.unique)/\(test)/"
        return (try Client.client(), prefix, S3Location(bucket: Client.bucket, key: prefix + "talk.mp4"))
    }

    static func uploads(_ client: S3Client, _ prefix: String) async throws -> [MultipartUploadInfo] {
        try await onThread { try client.listMultipartUploads(bucket: Client.bucket, prefix: prefix) }
    }

    @Test("stopped mid-upload: the upload is kept and recorded; the next attempt sends only the missing parts")
    func stoppedThenResumed() async throws {
        try await withTemporaryDirectory("resume") { directory in
            let (client, prefix, location) = try Self.place("stopped")
            let size = 4 * (5 << 20) + 123_456  // 5 parts
            let path = try Client.file(directory, "talk.bin", bytes: size, seed: 11)
            let journal = Journal()

            let first = await Self.upload(path, to: location, client: client, journal: journal, stopAfter: 1).run()
            guard case .stopped = first else {
                Issue.record("the first attempt was not stopped: \(first)")
                return
            }
            let record = try #require(journal.records.withLock { $0.first })
            #expect(record.location == "\(location)" && record.size == Int64(size) && record.partSize == 5 << 20)
            #expect(
                try await Self.uploads(client, prefix).map(\.uploadID) == [record.uploadID],
                "the upload was not kept"
            )
            let held = try await onThread { try client.listParts(location, uploadID: record.uploadID) }
            #expect(!held.isEmpty && held.count < 5, "\(held.map(\.number))")

            let second = await Self.upload(path, to: location, client: client, journal: journal).run()
            guard case .uploaded(let bytes) = second else {
                Issue.record("the second attempt: \(second)")
                return
            }
            #expect(bytes == Int64(size))
            let resumed = try #require(journal.resumed.withLock { $0 })
            // A part whose bytes had all gone out when the attempt stopped may land on the store
            // after `held` was listed (the store finishes it; the client had stopped waiting),
            // and one still being written may be listed short or with another ETag (seen on a
            // loaded machine): the resume keeps every part the store holds whole with this
            // file's bytes, at least those listed so here.
            let plan = MultipartPlan(size: Int64(size), partSize: 5 << 20)
            let whole = try held.filter { part in
                let range = plan.range(ofPart: part.number)
                return try part.size == Int64(range.count)
                    && part.etag.lowercased() == (try FileDigest.of(path, range: range).md5)
            }
            #expect(
                resumed.parts == 5 && resumed.kept >= whole.count && resumed.kept < 5,
                "\(resumed) held \(held.count), \(whole.count) of them whole"
            )
            let info = try #require(try await onThread { try client.head(location) })
            let md5s = try (1...5).map { try FileDigest.of(path, range: plan.range(ofPart: $0)).md5 }
            #expect(info.etag == MultipartPlan.etag(partMD5s: md5s), "the object is not this file's bytes")
            #expect(journal.records.withLock { $0.isEmpty }, "the record was not cleared")
            #expect(try await Self.uploads(client, prefix).isEmpty)
        }
    }

    @Test("a part the store holds with other bytes is sent again; a changed file size starts over")
    func differentBytesAreSentAgain() async throws {
        try await withTemporaryDirectory("resume-differs") { directory in
            let (client, prefix, location) = try Self.place("differs")
            let size = 2 * (5 << 20) + 1_000
            let before = try Client.file(directory, "before.bin", bytes: size, seed: 21)
            let journal = Journal()
            _ = await Self.upload(before, to: location, client: client, journal: journal, stopAfter: 1).run()
            let record = try #require(journal.records.withLock { $0.first })

            // The next attempt's file differs (another encoder, say): same size, other bytes.
            let after = try Client.file(directory, "after.bin", bytes: size, seed: 22)
            guard case .uploaded = await Self.upload(after, to: location, client: client, journal: journal).run() else {
                Issue.record("the second attempt failed")
                return
            }
            #expect(journal.resumed.withLock { $0 }?.kept == 0, "a part of other bytes was kept")
            let info = try #require(try await onThread { try client.head(location) })
            let plan = MultipartPlan(size: Int64(size), partSize: 5 << 20)
            let md5s = try (1...3).map { try FileDigest.of(after, range: plan.range(ofPart: $0)).md5 }
            #expect(info.etag == MultipartPlan.etag(partMD5s: md5s))
            #expect(try await Self.uploads(client, prefix).isEmpty)

            // A recorded upload of another size is aborted and a new one begun.
            journal.records.withLock { $0 = [] }
            _ = await Self.upload(before, to: location, client: client, journal: journal, stopAfter: 1).run()
            let stale = try #require(journal.records.withLock { $0.first })
            #expect(stale.uploadID != record.uploadID)
            let larger = try Client.file(directory, "larger.bin", bytes: size + (5 << 20), seed: 23)
            guard case .uploaded = await Self.upload(larger, to: location, client: client, journal: journal).run()
            else {
                Issue.record("the upload of the larger file failed")
                return
            }
            #expect(try await Self.uploads(client, prefix).isEmpty, "the stale upload was not aborted")
        }
    }

    @Test("a lease lost before the upload is recorded: the new upload is aborted at once")
    func lostLeaseBeforeRecording() async throws {
        try await withTemporaryDirectory("resume-lost") { directory in
            let (client, prefix, location) = try Self.place("lost")
            let path = try Client.file(directory, "talk.bin", bytes: 2 * (5 << 20), seed: 31)
            let journal = Journal()
            journal.leaseHeld.store(false, ordering: .relaxed)
            guard case .stopped = await Self.upload(path, to: location, client: client, journal: journal).run() else {
                Issue.record("an upload without a lease was not stopped")
                return
            }
            #expect(try await Self.uploads(client, prefix).isEmpty)
            #expect(try await onThread { try client.head(location) } == nil)
        }
    }

    @Test("a stale attempt whose record is refused never aborts the upload its successor recorded")
    func staleAttemptLeavesTheSuccessorsUpload() async throws {
        try await withTemporaryDirectory("resume-stale") { directory in
            let (client, prefix, location) = try Self.place("stale")
            let path = try Client.file(directory, "talk.bin", bytes: 2 * (5 << 20) + 7, seed: 41)
            // The successor's upload, of its own (other) size, is what the job records now.
            let theirs = try await onThread { try client.createMultipartUpload(location, contentType: nil) }
            let journal = Journal()
            journal.records.withLock {
                $0 = [UploadRecord(location: "\(location)", uploadID: theirs, size: 99 << 20, partSize: 5 << 20)]
            }
            journal.leaseHeld.store(false, ordering: .relaxed)
            guard case .stopped = await Self.upload(path, to: location, client: client, journal: journal).run() else {
                Issue.record("a stale attempt went on")
                return
            }
            #expect(
                try await Self.uploads(client, prefix).map(\.uploadID) == [theirs],
                "the successor's upload was touched"
            )
            try await onThread { try client.abortMultipartUpload(location, uploadID: theirs) }
        }
    }

    @Test(
        "an upload lost while it is continued (a lifecycle rule, an abort): the attempt fails retryable, the next starts over"
    )
    func lostUploadStartsOver() async throws {
        try await withTemporaryDirectory("resume-gone") { directory in
            let (client, prefix, location) = try Self.place("gone")
            let path = try Client.file(directory, "talk.bin", bytes: 5 * (5 << 20) + 11, seed: 51)
            let journal = Journal()
            _ = await Self.upload(path, to: location, client: client, journal: journal, stopAfter: 1).run()
            let record = try #require(journal.records.withLock { $0.first })
            // The upload disappears between the decision to continue it and its parts.
            journal.onResume.withLock {
                $0 = { _ = try? client.abortMultipartUpload(location, uploadID: record.uploadID) }
            }
            let second = await Self.upload(path, to: location, client: client, journal: journal).run()
            guard case .failed(let error) = second else {
                Issue.record("the lost upload was not noticed: \(second)")
                return
            }
            #expect(error.isTransient && error.message.contains("lost"), "\(error)")
            #expect(journal.records.withLock { $0.isEmpty }, "the lost upload is still recorded")
            journal.onResume.withLock { $0 = nil }
            guard case .uploaded = await Self.upload(path, to: location, client: client, journal: journal).run() else {
                Issue.record("the next attempt did not start over")
                return
            }
            #expect(try await Self.uploads(client, prefix).isEmpty)
        }
    }
}
