import Foundation
import JobctlCore

/// One finished file written to an `s3://` location (issue 28): a single PUT below the
/// multipart threshold, else a multipart upload with several parts in flight, each retried.
/// The write that makes the object visible (the PUT, or CompleteMultipartUpload) comes right
/// after `confirm` (the lease checked against the store) and is conditional on what the
/// destination held when the upload began (`If-None-Match: *`, or `If-Match` its ETag), so a
/// stale worker that wakes up late cannot replace the new owner's object: its condition fails,
/// and its next `confirm` finds the lease lost. A failed or stopped multipart upload is aborted,
/// so no parts stay behind, unless a `journal` records it with the job: then an upload stopped
/// or failed for a passing reason is kept for the job's next attempt to continue, and the
/// worker's sweep aborts it if the job ends instead.
public struct ObjectUpload: Sendable {
    public let client: S3Client
    public let file: String
    public let location: S3Location
    public let contentType: String
    /// Stored with the object (`x-amz-meta-…`): which job and attempt wrote it.
    public let metadata: [String: String]
    /// Asked between parts and by the transfer itself: stop (cancelled, lease lost).
    public let shouldStop: @Sendable () -> Bool
    /// The fence: whether this worker still holds the attempt, asked just before publishing.
    public let confirm: @Sendable () async -> Bool
    /// Called after a confirmation, just before the publishing write (the worker's failpoint).
    public let beforePublish: @Sendable () -> Void
    /// Called when a part is in the store, with its number (the worker's failpoint).
    public let partSent: @Sendable (Int) -> Void
    /// Files of this size and more go up in parts, of `partSize` (`nil`: `MultipartPlan`'s).
    public let threshold: Int64
    public let partSize: Int64?
    /// Where the job records its multipart upload between attempts (`nil`: not resumable).
    public let journal: UploadJournal?

    public init(
        client: S3Client,
        file: String,
        location: S3Location,
        contentType: String,
        metadata: [String: String] = [:],
        shouldStop: @escaping @Sendable () -> Bool = { false },
        confirm: @escaping @Sendable () async -> Bool = { true },
        beforePublish: @escaping @Sendable () -> Void = {},
        partSent: @escaping @Sendable (Int) -> Void = { _ in },
        threshold: Int64 = ObjectUpload.threshold,
        partSize: Int64? = ObjectUpload.partSize,
        journal: UploadJournal? = nil
    ) {
        self.client = client
        self.file = file
        self.location = location
        self.contentType = contentType
        self.metadata = metadata
        self.shouldStop = shouldStop
        self.confirm = confirm
        self.beforePublish = beforePublish
        self.partSent = partSent
        self.threshold = threshold
        self.partSize = partSize
        self.journal = journal
    }

    /// Files below this are one PUT (`JOBCTL_S3_MULTIPART_THRESHOLD` bytes, default 64 MiB).
    public static let threshold: Int64 = environmentBytes("JOBCTL_S3_MULTIPART_THRESHOLD") ?? 64 << 20
    /// The part size (`JOBCTL_S3_PART_SIZE` bytes, at least 5 MiB, S3's smallest part; by default
    /// `MultipartPlan`'s: 8 MiB or more).
    public static let partSize: Int64? = environmentBytes("JOBCTL_S3_PART_SIZE").map { max($0, 5 << 20) }
    static let partsInFlight = 4
    /// Tries of one part before the upload fails (transient errors only), and the waits between.
    static let partRetryDelays: [Duration] = [.milliseconds(500), .seconds(2), .seconds(5)]

    /// How many retries a transient failure earns: a store that stalled gets one (each try
    /// waits out the stall limit), any other failure `partRetryDelays`' count.
    static func retries(after error: S3Error) -> Int { error.stalled ? 1 : partRetryDelays.count }

    public enum Outcome: Sendable {
        case uploaded(bytes: Int64)
        case stopped
        case failed(S3Error)
    }

    public func run() async -> Outcome {
        do {
            let size = try fileSize()
            var condition = try await publishingCondition()
            if size < threshold {
                for _ in 0..<3 {
                    guard await confirm() else { return .stopped }
                    beforePublish()
                    do throws(S3Error) {
                        _ = try await blocking { [self, condition] in
                            try client.putObject(
                                file: file,
                                to: location,
                                contentType: contentType,
                                condition: condition,
                                metadata: metadata,
                                shouldAbort: shouldStop
                            )
                        }
                        return .uploaded(bytes: size)
                    } catch  where error.code == .preconditionFailed {
                        // The object changed since the upload began: under a lease just
                        // confirmed, this attempt's output is the one to publish.
                        condition = try await publishingCondition()
                    }
                }
                return .failed(S3Error(.transient, "\(location) kept changing while it was written"))
            }
            try await multipart(size: size, condition: condition)
            return .uploaded(bytes: size)
        } catch  where error.code == .stopped {
            return .stopped
        } catch {
            return .failed(error)
        }
    }

    private func multipart(size: Int64, condition initial: S3Client.WriteCondition) async throws(S3Error) {
        let plan = MultipartPlan(size: size, partSize: partSize)
        let (id, kept, send) = try await begin(plan)
        do throws(S3Error) {
            let parts = (kept + (try await uploadParts(plan, numbers: send, uploadID: id))).sorted {
                $0.number < $1.number
            }
            var condition = initial
            for _ in 0..<3 {
                guard await confirm() else {
                    throw S3Error(.stopped, "\(location): the lease was lost before publishing")
                }
                beforePublish()
                do throws(S3Error) {
                    let etag = try await blocking { [self, condition] in
                        try client.completeMultipartUpload(location, uploadID: id, parts: parts, condition: condition)
                    }
                    _ = try? await journal?.record(location, nil)
                    // Checked only where the store's part ETags are the parts' MD5s (not under
                    // SSE-KMS or SSE-C, whose ETags are other hex).
                    let expected = MultipartPlan.etag(partMD5s: parts.map { $0.etag.lowercased() })
                    if parts.allSatisfy(\.etagIsLocalMD5), !etag.isEmpty, etag.lowercased() != expected {
                        throw S3Error(
                            .transient,
                            "\(location): the assembled object's ETag is \(etag), not \(expected)"
                        )
                    }
                    return
                } catch  where error.code == .preconditionFailed {
                    condition = try await publishingCondition()
                }
            }
            throw S3Error(.transient, "\(location) kept changing while it was written")
        } catch {
            try await giveUp(id, after: error)
        }
    }

    /// The upload to send the parts to, the parts it already holds and those still to send: a
    /// new upload, or the one the job recorded when the store still holds it (`MultipartResume`).
    private func begin(_ plan: MultipartPlan) async throws(S3Error) -> (String, [UploadedPart], [Int]) {
        let every = Array(1...plan.partCount)
        guard let journal else { return (try await create(), [], every) }
        let record: UploadRecord?
        do {
            record = try await journal.recorded(location)
        } catch {
            throw S3Error(.transient, "\(location): the job's recorded upload could not be read: \(error)")
        }
        let decision = try await blocking { [self] () throws(S3Error) -> MultipartResume.Decision in
            var listed: [UploadedPart]?
            if let record, record.location == "\(location)" {
                do throws(S3Error) {
                    listed = try client.listParts(location, uploadID: record.uploadID)
                } catch  where error.code == .notFound {
                    listed = nil  // completed, aborted, or expired by a lifecycle rule
                } catch  where !error.isTransient && error.code != .stopped {
                    // A policy without ListMultipartUploadParts: a new upload, this one abandoned.
                    return .startOver(abandon: record)
                }
            }
            // Hashing the file's parts reads it whole: not for a stopped attempt.
            return MultipartResume.decide(record: record, location: location, plan: plan, listed: listed) {
                shouldStop() ? "" : ((try? FileDigest.of(file, range: plan.range(ofPart: $0)).md5) ?? "")
            }
        }
        switch decision {
        case .resume(let id, let keep, let send):
            journal.resumed(keep.count, plan.partCount)
            return (id, keep, send)
        case .startOver(let abandon):
            // The new upload is recorded (under the lease) before the old one is aborted: a
            // stale worker, whose record is refused, never aborts what its successor uses.
            let id = try await create()
            let recorded: Bool
            do {
                recorded = try await journal.record(
                    location,
                    UploadRecord(location: "\(location)", uploadID: id, size: plan.size, partSize: plan.partSize)
                )
            } catch {
                _ = try? await blocking { [self] in try client.abortMultipartUpload(location, uploadID: id) }
                throw S3Error(.transient, "\(location): the upload could not be recorded with the job: \(error)")
            }
            guard recorded else {
                _ = try? await blocking { [self] in try client.abortMultipartUpload(location, uploadID: id) }
                throw S3Error(.stopped, "\(location): the lease was lost before the upload began")
            }
            if let abandon {
                _ = try? await blocking { [self] in
                    try client.abortMultipartUpload(location, uploadID: abandon.uploadID)
                }
            }
            return (id, [], every)
        }
    }

    private func create() async throws(S3Error) -> String {
        try await blocking { [self] in
            try client.createMultipartUpload(location, contentType: contentType, metadata: metadata)
        }
    }

    /// After `error`: an upload the job records is kept when the error may pass (stopped, lost
    /// lease, a transient failure), for the next attempt to continue; otherwise it is aborted
    /// (they are billed, and invisible in a listing) — by this worker only while it still holds
    /// the job, so a stale worker never aborts the upload its successor continues.
    private func giveUp(_ id: String, after error: S3Error) async throws(S3Error) -> Never {
        // The upload is gone (a lifecycle rule, a sweep, a stale worker's abort) or holds a part
        // other than the one listed: the next try starts over, with a record cleared first.
        if Self.lostUpload(error) {
            _ = try? await journal?.record(location, nil)
            throw S3Error(.transient, "\(location): the multipart upload was lost; starting over (\(error.message))")
        }
        if let journal {
            if error.code == .stopped || error.isTransient { throw error }
            guard (try? await journal.record(location, nil)) == true else { throw error }
        }
        _ = try? await blocking { [self] in try client.abortMultipartUpload(location, uploadID: id) }
        throw error
    }

    /// Whether `error` says the upload itself is gone or no longer what was listed.
    static func lostUpload(_ error: S3Error) -> Bool {
        ["NoSuchUpload", "InvalidPart", "InvalidPartOrder"].contains(error.storeCode ?? "")
    }

    /// The parts `numbers`, at most `partsInFlight` at once, each tried again after a transient failure.
    private func uploadParts(
        _ plan: MultipartPlan,
        numbers: [Int],
        uploadID: String
    ) async throws(S3Error) -> [UploadedPart] {
        do {
            return try await withThrowingTaskGroup(of: UploadedPart.self) { group in
                var pending = numbers[...]
                var done: [UploadedPart] = []
                func add() {
                    guard let number = pending.popFirst() else { return }
                    group.addTask { try await self.part(number, of: plan, uploadID: uploadID) }
                }
                for _ in 0..<Self.partsInFlight { add() }
                while let part = try await group.next() {
                    done.append(part)
                    add()
                }
                return done
            }
        } catch let error as S3Error {
            throw error
        } catch {
            throw S3Error(.failed, "\(location): \(error)")
        }
    }

    private func part(_ number: Int, of plan: MultipartPlan, uploadID: String) async throws(S3Error) -> UploadedPart {
        var tries = 0
        while true {
            if shouldStop() { throw S3Error(.stopped, "\(location): stopped") }
            do {
                let sent = try await blocking { [self] in
                    try client.uploadPart(
                        file: file,
                        range: plan.range(ofPart: number),
                        to: location,
                        uploadID: uploadID,
                        number: number,
                        shouldAbort: shouldStop
                    )
                }
                partSent(number)
                return sent
            } catch  where error.isTransient && tries < Self.retries(after: error) {
                try? await Task.sleep(for: Self.partRetryDelays[tries])
                tries += 1
            }
        }
    }

    /// The condition for publishing: no object yet, or the one there now unchanged.
    private func publishingCondition() async throws(S3Error) -> S3Client.WriteCondition {
        let existing = try await blocking { [self] in try client.head(location) }
        return existing.map { .unchanged(etag: $0.etag) } ?? .absent
    }

    private func fileSize() throws(S3Error) -> Int64 {
        guard let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value
        else { throw S3Error(.failed, "\(file) cannot be read") }
        return size
    }

    /// Runs blocking object store work on a thread of its own.
    private func blocking<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws(S3Error) -> T {
        do {
            return try await onDedicatedThread("jobctl.s3", work)
        } catch let error as S3Error {
            throw error
        } catch {
            throw S3Error(.failed, "could not start a thread for the upload: \(error)")
        }
    }

    private static func environmentBytes(_ name: String) -> Int64? {
        ProcessInfo.processInfo.environment[name].flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
    }
}
