import ObjectStorage
import Testing

/// Whether a recorded multipart upload is continued, and with which parts (pure).
@Suite("Resuming a multipart upload")
struct MultipartResumeTests {
    static let location = S3Location(bucket: "media", key: "out/talk.mp4")
    static let plan = MultipartPlan(size: 20 << 20, partSize: 8 << 20)  // parts of 8, 8 and 4 MiB
    static let record = UploadRecord(
        location: "s3://media/out/talk.mp4",
        uploadID: "up-1",
        size: 20 << 20,
        partSize: 8 << 20
    )
    static func md5(_ number: Int) -> String { String(repeating: "\(number)", count: 32) }
    static func part(_ number: Int, etag: String? = nil, size: Int64? = nil) -> UploadedPart {
        UploadedPart(number: number, etag: etag ?? md5(number), size: size ?? Int64(plan.range(ofPart: number).count))
    }
    /// A part kept: as listed, with the MD5 of the local bytes it was checked against.
    static func kept(_ number: Int) -> UploadedPart {
        var part = part(number)
        part.md5 = md5(number)
        return part
    }

    @Test("no record: a new upload")
    func noRecord() {
        #expect(
            MultipartResume.decide(
                record: nil,
                location: Self.location,
                plan: Self.plan,
                listed: [],
                localMD5: Self.md5
            )
                == .startOver(abandon: nil)
        )
    }

    @Test("parts the store holds whole, with this file's MD5, are kept; the rest are sent")
    func keepsWhatMatches() {
        let listed = [Self.part(1), Self.part(2, etag: String(repeating: "f", count: 32))]
        let decision = MultipartResume.decide(
            record: Self.record,
            location: Self.location,
            plan: Self.plan,
            listed: listed,
            localMD5: Self.md5
        )
        #expect(decision == .resume(uploadID: "up-1", keep: [Self.kept(1)], send: [2, 3]))
        let all = MultipartResume.decide(
            record: Self.record,
            location: Self.location,
            plan: Self.plan,
            listed: [Self.part(3), Self.part(1), Self.part(2)],
            localMD5: Self.md5
        )
        #expect(all == .resume(uploadID: "up-1", keep: [Self.kept(1), Self.kept(2), Self.kept(3)], send: []))
    }

    @Test("a short part, or an ETag that is not an MD5 (SSE-KMS), is sent again")
    func distrustsWhatItCannotCheck() {
        let decision = MultipartResume.decide(
            record: Self.record,
            location: Self.location,
            plan: Self.plan,
            listed: [Self.part(1, size: 1000), Self.part(2, etag: "not-an-md5")],
            localMD5: Self.md5
        )
        #expect(decision == .resume(uploadID: "up-1", keep: [], send: [1, 2, 3]))
    }

    @Test("a record of another key, size or part size is abandoned; one the store no longer has starts over")
    func startsOver() {
        var other = Self.record
        other.location = "s3://media/out/other.mp4"
        var resized = Self.record
        resized.size += 1
        var repartitioned = Self.record
        repartitioned.partSize = 16 << 20
        for record in [other, resized, repartitioned] {
            #expect(
                MultipartResume.decide(
                    record: record,
                    location: Self.location,
                    plan: Self.plan,
                    listed: [],
                    localMD5: Self.md5
                )
                    == .startOver(abandon: record)
            )
        }
        #expect(
            MultipartResume.decide(
                record: Self.record,
                location: Self.location,
                plan: Self.plan,
                listed: nil,
                localMD5: Self.md5
            )
                == .startOver(abandon: nil)
        )
    }
}
