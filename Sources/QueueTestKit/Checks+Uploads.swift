import Foundation
import Queue
import Testing

// Conformance checks: uploads recorded under a lease (issue 28).
extension Checks {
    static func uploadRecords(_ h: Harness) async throws {
        let job = try await h.submit("uploading")
        let first = try await h.claim(job.id, as: workerA, lease: .seconds(30), on: 0)
        #expect(try await h.handle(1).recordedUpload(of: job.id) == nil)
        #expect(try await h.handle(1).recordUpload(first.lease, #"{"upload":"one"}"#))
        #expect(try await h.handle(0).recordedUpload(of: job.id) == #"{"upload":"one"}"#)
        #expect(try await h.store.abandonedUploads(limit: 10).isEmpty, "a running job's upload is not abandoned")

        // A retryable failure keeps the record for the next attempt, which can replace it.
        #expect(try await h.handle(1).fail(first.lease, error: retryableError, retryDelay: .zero))
        #expect(try await h.store.recordedUpload(of: job.id) == #"{"upload":"one"}"#)
        #expect(try await h.store.abandonedUploads(limit: 10).isEmpty, "a job waiting to run again is not ended")
        let second = try await h.claim(job.id, as: workerB, lease: .seconds(30), on: 1)
        #expect(try await h.handle(0).recordedUpload(of: job.id) == #"{"upload":"one"}"#)

        // The first attempt's lease is stale: it can neither replace nor clear the record.
        #expect(try await h.handle(0).recordUpload(first.lease, nil) == false)
        #expect(try await h.handle(0).recordUpload(first.lease, #"{"upload":"stale"}"#) == false)
        #expect(try await h.store.recordedUpload(of: job.id) == #"{"upload":"one"}"#)
        #expect(try await h.handle(1).recordUpload(second.lease, #"{"upload":"two"}"#))

        // Clearing is the completed upload's last step; recording again is allowed.
        #expect(try await h.handle(1).recordUpload(second.lease, nil))
        #expect(try await h.store.recordedUpload(of: job.id) == nil)
        #expect(try await h.handle(1).recordUpload(second.lease, #"{"upload":"three"}"#))

        // The job ends with the record still there: abandoned, for the sweep.
        #expect(try await h.handle(1).fail(second.lease, error: finalError, retryDelay: .zero))
        #expect(try await h.handle(0).recordUpload(second.lease, nil) == false, "an ended job's lease writes nothing")
        let abandoned = try await h.handle(1).abandonedUploads(limit: 10)
        #expect(abandoned.map(\.id) == [job.id] && abandoned.map(\.state) == [#"{"upload":"three"}"#])

        // The sweep claims (clears) a record before it aborts what it names, and only the record
        // it read: a different state (a retry recorded another upload meanwhile) stays.
        #expect(try await h.handle(0).clearAbandonedUpload(of: job.id, state: #"{"upload":"two"}"#) == false)
        #expect(try await h.store.recordedUpload(of: job.id) == #"{"upload":"three"}"#)
        #expect(try await h.handle(0).clearAbandonedUpload(of: job.id, state: #"{"upload":"three"}"#))
        #expect(try await h.store.recordedUpload(of: job.id) == nil)
        #expect(try await h.store.abandonedUploads(limit: 10).isEmpty)

        // A queued job's record (a retry after the sweep's listing) is never cleared by it.
        let retried = try await h.store.retry(job.id)
        #expect(retried.status == .unknown)
        let third = try await h.claim(job.id, as: workerA, lease: .seconds(30), on: 0)
        #expect(try await h.store.recordUpload(third.lease, #"{"upload":"four"}"#))
        #expect(try await h.handle(1).clearAbandonedUpload(of: job.id, state: #"{"upload":"four"}"#) == false)
        #expect(try await h.store.recordedUpload(of: job.id) == #"{"upload":"four"}"#, "a running job keeps its record")

        // The limit, over several ended jobs.
        #expect(try await h.store.complete(third.lease, result: .object([:]), tracks: []))
        let more = try await h.submit("another")
        let claimed = try await h.claim(more.id, as: workerB, lease: .seconds(30), on: 1)
        #expect(try await h.store.recordedUpload(of: more.id) == nil, "one job's record is its own")
        #expect(try await h.store.recordUpload(claimed.lease, #"{"upload":"five"}"#))
        _ = try await h.store.cancel(more.id)
        #expect(try await h.store.confirmCancelled(claimed.lease))
        #expect(try await h.store.abandonedUploads(limit: 10).count == 2)
        #expect(try await h.store.abandonedUploads(limit: 1).count == 1)
    }
}
