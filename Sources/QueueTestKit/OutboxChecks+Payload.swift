import Foundation
import JobctlCore
import Queue
import Testing

// Outbox conformance checks: the body.
extension OutboxChecks {
    static func payload(_ h: OutboxHarness) async throws {
        let secretURL = "https://user:pa55@hooks.example/jobctl/done?token=abc#frag"
        // Credentials and the query (a token, like a pre-signed URL's signature) are never shown.
        let redacted = "https://hooks.example/jobctl/done"
        #expect(MediaLocation.displayed(secretURL) == redacted)

        // completed, with tracks and a result.
        let completed = try await h.submit("completed", webhook: secretURL)
        let completedClaim = try await h.claim(completed.id)
        h.clock.advance(by: .milliseconds(1500))
        let result: JSONValue = .object([
            "output": .string("/out/completed.mp4"), "bytes": .number(1234), "duration": .number(3.04),
        ])
        let tracks = [Checks.doneTracks[0]]
        #expect(try await h.store.complete(completedClaim.lease, result: result, tracks: tracks))
        let completedAt = h.clock.date
        h.clock.advance(by: .seconds(2))

        // failed.
        let failed = try await h.submit("failed", webhook: secretURL)
        let failedClaim = try await h.claim(failed.id)
        h.clock.advance(by: .milliseconds(250))
        #expect(try await h.store.fail(failedClaim.lease, error: finalError, retryDelay: .zero))
        let failedAt = h.clock.date
        h.clock.advance(by: .seconds(2))

        // cancelled while queued.
        let cancelled = try await h.submit("cancelled", webhook: secretURL)
        h.clock.advance(by: .milliseconds(7))
        _ = try await h.store.cancel(cancelled.id)
        let cancelledAt = h.clock.date
        h.clock.advance(by: .seconds(2))

        let claimed = try await h.handle(2).claimDeliveries(as: "dispatcher-1", limit: 10, lease: .seconds(60))
        #expect(claimed.count == 3)
        let cases: [(Job, String, Date)] = [
            (completed, "job.completed", completedAt), (failed, "job.failed", failedAt),
            (cancelled, "job.cancelled", cancelledAt),
        ]
        for (submitted, type, at) in cases {
            guard let item = claimed.first(where: { $0.delivery.jobID == submitted.id }) else {
                Issue.record("no event claimed for \(submitted.input)")
                continue
            }
            let job = try await h.fetch(submitted.id)
            #expect(job.status.isTerminal)
            #expect(item.delivery.type == type)
            #expect(item.delivery.url == secretURL, "\(type): the delivery keeps the credentials, to send them")
            let text = String(decoding: item.payload, as: UTF8.self)
            #expect(!text.contains("pa55"), "\(type): the body never carries the URL's credentials: \(text)")

            let body = try JSONDecoder().decode(JSONValue.self, from: item.payload)
            guard case .object(let fields) = body else {
                Issue.record("\(type): the body is not a JSON object: \(text)")
                continue
            }
            #expect(Set(fields.keys) == ["type", "timestamp", "data"], "\(type): \(fields.keys.sorted())")
            #expect(body["type"] == .string(type))
            #expect(
                body["timestamp"] == .string(Job.timestamp(at)),
                "\(type): the time of the transition, ISO 8601 UTC"
            )
            if let timestamp = body["timestamp"]?.stringValue {
                let parsed = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(timestamp)
                #expect(ms(parsed) == ms(at), "\(type): \(timestamp) parses back to the transition's time")
                #expect(timestamp.hasSuffix("Z"), "\(type): UTC")
            }
            let jobJSON = try JSONDecoder().decode(JSONValue.self, from: Job.makeJSONEncoder(pretty: false).encode(job))
            #expect(body["data"] == jobJSON, "\(type): data is the job's JSON at its terminal state")
            let data = body["data"]
            #expect(data?["id"] == .string(job.id.rawValue))
            #expect(data?["status"] == .string(job.status.rawValue))
            #expect(data?["webhook"] == .string(redacted), "\(type): the webhook URL without credentials or query")
            #expect(data?["finishedAt"] == .string(Job.timestamp(at)))
            switch type {
            case "job.completed":
                #expect(data?["result"] == result)
                #expect(data?["error"] == .null)
                #expect(data?["progress"] == .number(1))
                #expect(data?["tracks"]?.arrayCount == 1)
            case "job.failed":
                #expect(data?["result"] == .null)
                #expect(data?["error"]?["code"] == .string(finalError.code.rawValue))
                #expect(data?["error"]?["message"] == .string(finalError.message))
                #expect(data?["error"]?["retryable"] == .bool(false))
            default:
                #expect(data?["result"] == .null)
                #expect(data?["error"] == .null)
            }

            // The delivery as listed and as JSON: the URL without credentials when encoded.
            let listed = try await h.events(submitted.id)
            #expect(listed.map(\.url) == [secretURL])
            let encoded = try JSONEncoder().encode(item.delivery)
            let delivery = try JSONDecoder().decode(JSONValue.self, from: encoded)
            #expect(
                delivery["url"] == .string(redacted),
                "\(type): the delivery's JSON shows the URL without credentials or query"
            )
            #expect(!String(decoding: encoded, as: UTF8.self).contains("pa55"))
            #expect(delivery["id"] == .string(item.delivery.id))
            #expect(delivery["jobId"] == .string(job.id.rawValue))
        }

        // Every attempt sends the same bytes: a retried event's payload is unchanged.
        if let first = claimed.first {
            #expect(
                try await h.handle(1).record(
                    first,
                    outcome: .retry(h.attempt(1, status: 500, error: "HTTP 500"), after: .seconds(1))
                )
            )
            h.clock.advance(by: .seconds(1))
            let again = try await h.claimEvent(first.delivery.id, on: 3)
            #expect(again.payload == first.payload, "the body is serialized once, when the event is written")
        }
    }

    static func ids(_ h: OutboxHarness) async throws {
        var ids: [String] = []
        for index in 0..<10 {
            let (_, event) = try await h.completedEvent("job-\(index)")
            ids.append(event.id)
            if index % 3 == 0 { h.clock.advance(by: .milliseconds(1)) }
        }
        for id in ids {
            #expect(id.hasPrefix("msg_"), "\(id) starts with msg_")
            #expect(id.count > 4, "\(id) has something after msg_")
            #expect(
                id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") },
                "\(id): a header-safe id"
            )
        }
        #expect(Set(ids).count == ids.count, "every event has its own id: \(ids)")
        let claimed = try await h.handle(2).claimDeliveries(as: "dispatcher-1", limit: 100, lease: .seconds(60))
        #expect(Set(claimed.map(\.delivery.id)) == Set(ids), "claims give the listed ids")
        for index in h.stores.indices {
            let listed = try await h.handle(index).deliveries(job: nil, limit: 100)
            #expect(Set(listed.map(\.id)) == Set(ids), "handle \(index) lists the same ids")
        }
    }
}
