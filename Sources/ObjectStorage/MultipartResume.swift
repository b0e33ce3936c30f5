import Foundation

/// A multipart upload as a job records it (issue 28): enough for the next attempt, on any
/// worker, to continue it instead of starting over.
public struct UploadRecord: Codable, Sendable, Hashable {
    /// `s3://BUCKET/KEY`.
    public var location: String
    public var uploadID: String
    public var size: Int64
    public var partSize: Int64

    public init(location: String, uploadID: String, size: Int64, partSize: Int64) {
        self.location = location
        self.uploadID = uploadID
        self.size = size
        self.partSize = partSize
    }
}

/// Whether a recorded upload can be continued, and with which of its parts: a pure decision,
/// from the record, the file about to be sent and the parts the store says it holds.
///
/// A part is kept only when the store holds it whole and its ETag is the MD5 of the same bytes
/// of this file: an encode repeated on another worker gives the same bytes when the encoder
/// and its settings are the same (x264 is deterministic for a given thread count), and any
/// part that differs is sent again, under the same number (S3 keeps the last one sent).
public enum MultipartResume {
    public enum Decision: Sendable, Hashable {
        /// Start a new upload; abort `abandon` first if there is one (it cannot be used).
        case startOver(abandon: UploadRecord?)
        /// Continue `uploadID`: keep these parts, send the others.
        case resume(uploadID: String, keep: [UploadedPart], send: [Int])
    }

    /// - Parameters:
    ///   - listed: the parts the store lists for the recorded upload; `nil` when it has no such
    ///     upload any more (completed, aborted, expired by a lifecycle rule).
    ///   - localMD5: the MD5 (hex) of part `number` of the file about to be sent.
    public static func decide(
        record: UploadRecord?,
        location: S3Location,
        plan: MultipartPlan,
        listed: [UploadedPart]?,
        localMD5: (Int) -> String
    ) -> Decision {
        guard let record else { return .startOver(abandon: nil) }
        guard record.location == "\(location)", record.size == plan.size, record.partSize == plan.partSize else {
            return .startOver(abandon: record)
        }
        guard let listed else { return .startOver(abandon: nil) }
        var keep: [UploadedPart] = []
        var send: [Int] = []
        let held = Dictionary(listed.map { ($0.number, $0) }, uniquingKeysWith: { _, last in last })
        for number in 1...plan.partCount {
            let range = plan.range(ofPart: number)
            if let part = held[number], part.size == Int64(range.count), S3Client.isMD5(part.etag),
                case let md5 = localMD5(number), part.etag.lowercased() == md5
            {
                var part = part
                part.md5 = md5
                keep.append(part)
            } else {
                send.append(number)
            }
        }
        return .resume(uploadID: record.uploadID, keep: keep, send: send)
    }
}

/// Where a job keeps its multipart uploads between attempts (the worker's adapter over the job
/// table's fenced `upload_state`): read by the next attempt, written when an upload begins,
/// cleared when it is published or given up.
public struct UploadJournal: Sendable {
    /// The upload the job recorded for `location`, if any.
    public var recorded: @Sendable (_ location: S3Location) async throws -> UploadRecord?
    /// Records `record` for `location` (`nil`: clears it). `false`: the lease was lost, nothing
    /// was written.
    public var record: @Sendable (_ location: S3Location, _ record: UploadRecord?) async throws -> Bool
    /// Told when an upload is continued: how many of its parts the store already held whole.
    public var resumed: @Sendable (_ kept: Int, _ parts: Int) -> Void

    public init(
        recorded: @escaping @Sendable (_ location: S3Location) async throws -> UploadRecord?,
        record: @escaping @Sendable (_ location: S3Location, _ record: UploadRecord?) async throws -> Bool,
        resumed: @escaping @Sendable (_ kept: Int, _ parts: Int) -> Void = { _, _ in }
    ) {
        self.recorded = recorded
        self.record = record
        self.resumed = resumed
    }

    /// The records of one job, as its `upload_state` holds them: a JSON array, one per location
    /// (a file set uploads its files one after another, and a crash may leave one of each).
    public static func decode(_ state: String?) -> [UploadRecord] {
        guard let state, let data = state.data(using: .utf8) else { return [] }
        return (try? JSONDecoder().decode([UploadRecord].self, from: data)) ?? []
    }

    /// `records` as `upload_state`; `nil` when there are none.
    public static func encode(_ records: [UploadRecord]) -> String? {
        guard !records.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(records.sorted { $0.location < $1.location })).map {
            String(decoding: $0, as: UTF8.self)
        }
    }

    /// `records` with `location`'s replaced by `record` (or removed).
    public static func replacing(
        _ location: S3Location,
        with record: UploadRecord?,
        in records: [UploadRecord]
    ) -> [UploadRecord] {
        records.filter { $0.location != "\(location)" } + (record.map { [$0] } ?? [])
    }
}
