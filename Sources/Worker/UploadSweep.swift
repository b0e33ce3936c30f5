import Foundation
import JobctlCore
import Logging
import ObjectStorage
import Queue

/// Aborts the multipart uploads that ended jobs left recorded (issue 28).
///
/// A job's attempt records its multipart upload with the job (`upload_state`) and keeps it when
/// it is stopped or fails for a passing reason, so that the next attempt continues it. When
/// there is no next attempt — the job failed for good, was cancelled, or a killed worker's
/// attempt was its last — the parts would stay in the bucket, billed and invisible. So every
/// worker, when it starts and every hour with its staging sweep, aborts the uploads of ended
/// jobs: it claims each record (clears it, only if the job is still ended and the record
/// unchanged), then aborts the uploads it named. An upload the store no longer has (completed,
/// or expired by a lifecycle rule) is fine; one the store would not abort is left to the
/// bucket's lifecycle rule, the backstop. A job without credentials for a bucket waits for a
/// worker that has them: the sweep only claims records once it has a client.
struct UploadSweep {
    let store: any JobQueueDriver
    let clients: S3ClientProvider
    let logger: Logger
    /// Jobs handled per run.
    var limit = 100

    /// Aborts what it can; returns the jobs whose records it cleared.
    @discardableResult
    func run() async -> [JobID] {
        let abandoned: [(id: JobID, state: String)]
        do {
            abandoned = try await store.abandonedUploads(limit: limit)
        } catch {
            // A worker that stops (`--once` with an empty queue, a signal) cancels the sweep
            // with it: nothing went wrong, and the next worker sweeps.
            if Task.isCancelled {
                logger.debug("Sweeping abandoned uploads stopped with the worker")
                return []
            }
            logger.warning(
                "Sweeping abandoned uploads stopped: the job database did not answer",
                metadata: ["error": "\(error)"]
            )
            return []
        }
        guard !abandoned.isEmpty else { return [] }
        let client: S3Client
        do {
            client = try clients.client()
        } catch {
            logger.warning(
                "Abandoned uploads left for the next sweep: no object store client",
                metadata: ["error": "\(error)", "jobs": "\(abandoned.count)"]
            )
            return []
        }
        var cleared: [JobID] = []
        for (id, state) in abandoned {
            // Claimed first: a job retried since the listing keeps its record, and its upload,
            // which its new attempt may be continuing.
            do {
                guard try await store.clearAbandonedUpload(of: id, state: state) else { continue }
            } catch {
                logger.warning(
                    "An abandoned upload's record could not be claimed",
                    metadata: ["job.id": "\(id)", "error": "\(error)"]
                )
                continue
            }
            cleared.append(id)
            for record in UploadJournal.decode(state) { await abort(record, client: client, job: id) }
        }
        return cleared
    }

    /// Best effort: an upload the store would not abort is left to the bucket's lifecycle rule
    /// (its record is gone, so one refusal cannot hold up the sweep for good).
    private func abort(_ record: UploadRecord, client: S3Client, job: JobID) async {
        guard case .success(let location) = S3Location.parse(record.location) else { return }
        do {
            try await onDedicatedThread("jobctl.s3") {
                do throws(S3Error) {
                    try client.abortMultipartUpload(location, uploadID: record.uploadID)
                } catch  where error.code == .notFound {
                    // Completed, aborted already, or expired by a lifecycle rule.
                }
            }
            logger.info(
                "Aborted an upload its ended job left behind",
                metadata: ["job.id": "\(job)", "job.output": "\(location)"]
            )
        } catch {
            logger.warning(
                "An abandoned upload could not be aborted; the bucket's lifecycle rule will remove its parts",
                metadata: ["job.id": "\(job)", "job.output": "\(location)", "error": "\(error)"]
            )
        }
    }
}
