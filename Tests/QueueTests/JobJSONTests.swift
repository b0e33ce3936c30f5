import Foundation
import Testing

@testable import JobctlCore
@testable import Queue

/// The job JSON of docs/spec.md §4 (`show --json`, the webhook's `data`).
@Suite("Job JSON")
struct JobJSONTests {
    static let specFields = [
        "id", "kind", "status", "input", "output", "preset", "format", "range", "priority", "attempt", "maxAttempts",
        "progress",
        "tracks", "result", "error", "webhook", "metadata", "worker", "createdAt", "startedAt", "finishedAt",
        "owner",
    ]
    static let created = Date(timeIntervalSince1970: 1_767_225_600.123)  // 2026-01-01T00:00:00.123Z

    static func queued(webhook: String? = nil) -> Job {
        Job(
            id: "0194a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e",
            kind: .export,
            status: .unknown,
            input: "/data/in.mov",
            output: "/out/clip.mp4",
            preset: "low",
            presetSettings: .null,
            format: nil,
            range: nil,
            priority: 0,
            attempt: 0,
            maxAttempts: 3,
            progress: 0,
            tracks: [],
            result: nil,
            error: nil,
            webhook: webhook,
            metadata: [:],
            idempotencyKey: nil,
            worker: nil,
            cancelRequested: false,
            runAt: created,
            createdAt: created,
            startedAt: nil,
            finishedAt: nil
        )
    }

    static func finished() -> Job {
        var job = queued(webhook: "https://user:pass@app.example/hooks/export?x=1")
        job.status = .failed
        job.format = "mp4"
        job.range = Job.Range(start: 1.5, duration: 3)
        job.priority = 5
        job.attempt = 2
        job.maxAttempts = 3
        job.progress = 0.5
        job.tracks = [
            JobTrack(
                index: 0,
                sourceIndex: 1,
                mediaType: "video",
                status: .failed,
                codec: "h264",
                read: 48,
                written: 47
            )
        ]
        job.result = .object(["output": .string("/out/clip.mp4"), "bytes": .number(1024)])
        job.error = JobError(code: .decodeFailed, message: "too much damage at 00:01:02", retryable: false)
        job.metadata = ["customer": "acme"]
        job.worker = "host-a-1"
        job.startedAt = created.addingTimeInterval(1)
        job.finishedAt = created.addingTimeInterval(61.5)
        return job
    }

    static func object(_ job: Job, pretty: Bool = false) throws -> [String: Any] {
        let data = try Job.makeJSONEncoder(pretty: pretty).encode(job)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("every docs/spec.md §4 field is there, null when absent")
    func everyFieldNullWhenAbsent() throws {
        let json = try Self.object(Self.queued())
        for field in Self.specFields {
            #expect(json.keys.contains(field), "missing field \(field)")
        }
        for field in ["format", "range", "result", "error", "webhook", "worker", "startedAt", "finishedAt", "owner"] {
            #expect(json[field] is NSNull, "\(field) should be null, is \(String(describing: json[field]))")
        }
        #expect(json["id"] as? String == "0194a0b4-4c6e-7d3a-9b1e-2f3a4b5c6d7e")
        #expect(json["kind"] as? String == "export")
        #expect(json["status"] as? String == "unknown")
        #expect(json["attempt"] as? Int == 0)
        #expect(json["maxAttempts"] as? Int == 3)
        #expect(json["progress"] as? Double == 0)
        #expect((json["tracks"] as? [Any])?.isEmpty == true)
        #expect((json["metadata"] as? [String: String]) == [:])
        #expect(json["createdAt"] as? String == "2026-01-01T00:00:00.123Z")
    }

    @Test("the values of a finished job")
    func values() throws {
        let json = try Self.object(Self.finished(), pretty: true)
        #expect(json["status"] as? String == "failed")
        #expect(json["format"] as? String == "mp4")
        let range = try #require(json["range"] as? [String: Any])
        #expect(range["start"] as? Double == 1.5)
        #expect(range["duration"] as? Double == 3)
        #expect(json["priority"] as? Int == 5)
        #expect(json["attempt"] as? Int == 2)
        #expect(json["progress"] as? Double == 0.5)
        let tracks = try #require(json["tracks"] as? [[String: Any]])
        #expect(tracks.count == 1)
        #expect(tracks.first?["index"] as? Int == 0)
        #expect(tracks.first?["mediaType"] as? String == "video")
        #expect(tracks.first?["status"] as? String == "failed")
        #expect(tracks.first?["codec"] as? String == "h264")
        let result = try #require(json["result"] as? [String: Any])
        #expect(result["output"] as? String == "/out/clip.mp4")
        #expect(result["bytes"] as? Int == 1024)
        let error = try #require(json["error"] as? [String: Any])
        #expect(error["code"] as? String == "decode_failed")
        #expect(error["message"] as? String == "too much damage at 00:01:02")
        #expect(error["retryable"] as? Bool == false)
        #expect(json["metadata"] as? [String: String] == ["customer": "acme"])
        #expect(json["worker"] as? String == "host-a-1")
        #expect(json["createdAt"] as? String == "2026-01-01T00:00:00.123Z")
        #expect(json["startedAt"] as? String == "2026-01-01T00:00:01.123Z")
        #expect(json["finishedAt"] as? String == "2026-01-01T00:01:01.623Z")
    }

    /// docs/spec.md §4 lists `range` {`start`,`duration`} and `tracks` [{`index`,`mediaType`,`status`,
    /// `codec`,...}]: like the top-level fields, these are written as null when absent.
    @Test("nested optional fields are null when absent: range.duration, tracks[].codec")
    func nestedNulls() throws {
        var job = Self.queued()
        job.range = Job.Range(start: 2, duration: nil)
        job.tracks = [
            JobTrack(index: 0, sourceIndex: 0, mediaType: "data", status: .unknown, codec: nil, read: 0, written: 0)
        ]
        let json = try Self.object(job)
        let range = try #require(json["range"] as? [String: Any])
        #expect(range["start"] as? Double == 2)
        #expect(range["duration"] is NSNull, "a range to the end: duration null; got \(range)")
        let track = try #require((json["tracks"] as? [[String: Any]])?.first)
        #expect(track["codec"] is NSNull, "a track without a codec: codec null; got \(track)")
    }

    @Test("a delivery attempt has every field, statusCode and error null when absent (as the API's document says)")
    func deliveryAttemptNulls() throws {
        let attempt = DeliveryAttempt(attempt: 1, at: Date(), statusCode: nil, latency: 12, error: nil, dispatcher: "w")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Job.makeJSONEncoder().encode(attempt)) as? [String: Any]
        )
        #expect(Set(json.keys) == ["attempt", "at", "statusCode", "latency", "error", "dispatcher"])
        #expect(json["error"] is NSNull && json["statusCode"] is NSNull)
        // The stores keep the log as JSON too: what is written reads back.
        let decoded = try JSONDecoder().decode(DeliveryAttempt.self, from: JSONEncoder().encode(attempt))
        #expect(decoded == attempt)
    }

    @Test(
        "the webhook URL is written without credentials or query",
        arguments: [
            ("https://user:pass@app.example/hooks/export?x=1", "https://app.example/hooks/export"),
            ("https://app.example/hooks/export?token=s3cret#part", "https://app.example/hooks/export"),
            ("https://token@app.example/hooks/export", "https://app.example/hooks/export"),
            ("http://user:p%40ss@127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook"),
            ("https://app.example/hooks/export", "https://app.example/hooks/export"),
        ]
    )
    func webhookWithoutCredentials(_ url: String, _ expected: String) throws {
        let job = Self.queued(webhook: url)
        #expect(job.webhook == url, "the job keeps the URL it must call")
        let data = try Job.makeJSONEncoder().encode(job)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["webhook"] as? String == expected)
        let text = String(decoding: data, as: UTF8.self)
        #expect(!text.contains("pass") && !text.contains("token") && !text.contains("user"), "credentials in \(text)")
        let plain = String(decoding: try JSONEncoder().encode(job), as: UTF8.self)
        #expect(!plain.contains("pass") && !plain.contains("token"), "any encoder: no credentials")
        #expect(MediaLocation.displayed(url) == expected)
    }

    /// Redaction fails closed: what `URLComponents` cannot parse is cut by the characters.
    @Test("blunt redaction of unparsable URLs")
    func bluntRedaction() {
        #expect(MediaLocation.bluntlyRedacted("https://u:p@h.example/a b?token=x#f") == "https://h.example/a b")
        #expect(MediaLocation.bluntlyRedacted("https://h.example/p@th?X-Signature=1") == "https://h.example/p@th")
        #expect(MediaLocation.bluntlyRedacted("https://u@h.example?x=1") == "https://h.example")
        #expect(
            MediaLocation.bluntlyRedacted("https://u:p@h.example/a?x=1", keepingQuery: true)
                == "https://h.example/a?x=1"
        )
    }

    /// Stores build dates from Unix milliseconds (`Date(timeIntervalSince1970: ms / 1000)`); the
    /// JSON must show those milliseconds, not one less.
    @Test("timestamps: ISO 8601 UTC with the date's milliseconds")
    func timestamps() {
        #expect(Job.timestamp(Self.created) == "2026-01-01T00:00:00.123Z")
        #expect(Job.timestamp(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Job.timestamp(Date(timeIntervalSince1970: 1_767_225_600)) == "2026-01-01T00:00:00.000Z")
        var wrong: [String] = []
        for milliseconds in Int64(0)..<1_000 {
            let date = Date(timeIntervalSince1970: Double(1_767_225_600_000 + milliseconds) / 1000)
            let expected = "2026-01-01T00:00:00.\(String(format: "%03d", milliseconds))Z"
            let actual = Job.timestamp(date)
            if actual != expected { wrong.append("\(expected) → \(actual)") }
        }
        #expect(wrong.count == 0, "\(wrong.count) of 1000 millisecond dates are printed wrong, e.g. \(wrong.prefix(4))")
    }

    @Test("decoding the JSON gives the job back")
    func roundTrip() throws {
        var job = Self.finished()
        job.webhook = "https://app.example/hooks/export"
        job.idempotencyKey = "key-1"
        job.presetSettings = .object([
            "name": .string("low"), "crf": .null, "bitrate": .number(300_000), "faststart": .bool(true),
        ])
        job.cancelRequested = true
        let decoded = try JSONDecoder().decode(Job.self, from: try JSONEncoder().encode(job))
        #expect(decoded == job)
        let queued = Self.queued()
        #expect(try JSONDecoder().decode(Job.self, from: try JSONEncoder().encode(queued)) == queued)
    }

    @Test(
        "JSONValue keeps numbers, booleans and nulls apart",
        arguments: [
            JSONValue.number(1), .number(0), .number(-2.5), .number(1e20), .bool(true), .bool(false), .null,
            .string("1"), .string("true"),
            .array([.number(1), .bool(true), .null]),
            .object(["a": .number(0), "b": .bool(false), "c": .null, "d": .object([:])]),
        ]
    )
    func jsonValueRoundTrip(_ value: JSONValue) throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: try JSONEncoder().encode(value))
        #expect(decoded == value)
    }
}
