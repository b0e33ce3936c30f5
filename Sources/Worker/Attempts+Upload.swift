import Foundation
import JobKinds
import JobctlCore
import Logging
import Media
import ObjectStorage
import Queue
import SafeHTTP

extension Attempts {
    /// Sends the finished outputs (one file, or each file of a set in turn, by `PublishRank`)
    /// through the attempt's publisher, each on a thread of its own that stops sending within a
    /// second of the attempt being stopped — cancelled, the lease found lost, or the lease's
    /// local deadline passed without a renewal (a worker frozen mid-upload). A retry resumes
    /// with the first file not uploaded yet; each file has the whole retry budget.
    func upload(_ attempt: inout Attempt, tries: Int) async -> AttemptStateMachine.UploadOutcome {
        let execution = attempt.execution
        guard let uploads = attempt.held?.uploads, !uploads.isEmpty, let publisher = attempt.publisher,
            let url = execution.prepared?.uploadURL
        else {
            return .failed(JobError(code: .internalError, message: "an upload without an output"))
        }
        if tries == 0 {
            attempt.logger.info("Uploading the output", metadata: ["job.output": "\(MediaLocation.displayed(url))"])
        }
        let logger = attempt.logger
        let publishing = PublishingAttempt(
            lease: execution.claimed.lease,
            shouldStop: { execution.shouldStopTransfer },
            confirm: { [self] in
                guard case .held(let cancelRequested, let late) = await fence(execution, logger: logger) else {
                    return false
                }
                return !cancelRequested && !late
            },
            journal: journal(execution.claimed.lease, logger: logger),
            logger: logger
        )
        var tries = tries  // retries of the file being sent: each file has the whole budget
        for file in OutputPublisher.ordered(uploads) where attempt.uploaded[file.name] == nil {
            if !attempt.uploaded.isEmpty { Failpoints.hit("between-files", logger: logger) }
            if execution.shouldStopTransfer { return .stopped }
            switch await publisher.send(file, tries: tries, for: publishing) {
            case .published(let bytes):
                attempt.uploaded[file.name] = bytes
                attempt.uploadTries = 0
                tries = 0
            case .failed(let failure):
                return .failed(failure)
            case .stopped:
                if execution.stopReason == .leaseLost {
                    logger.warning("Lease lost during the upload: transfer stopped")
                }
                return .stopped
            case .retry(let delay, let what):
                logger.warning("Upload failed; retrying", metadata: ["error": "\(what)", "retry.in": "\(delay)"])
                return .retry(after: delay)
            }
        }
        return .uploaded(bytes: attempt.uploaded.values.reduce(0, +))
    }

    /// The job's record of its multipart uploads, in its row, written under the attempt's lease.
    private func journal(_ lease: Lease, logger: Logger) -> UploadJournal {
        let store = self.store
        return UploadJournal(
            recorded: { location in
                UploadJournal.decode(try await store.recordedUpload(of: lease.jobID)).first {
                    $0.location == "\(location)"
                }
            },
            record: { location, record in
                let records = UploadJournal.decode(try await store.recordedUpload(of: lease.jobID))
                return try await store.recordUpload(
                    lease,
                    UploadJournal.encode(UploadJournal.replacing(location, with: record, in: records))
                )
            },
            resumed: { kept, parts in
                logger.info(
                    "Continuing the upload an earlier attempt began",
                    metadata: ["upload.parts": "\(parts)", "upload.parts.kept": "\(kept)"]
                )
            }
        )
    }
}
