import Foundation
import JobKinds
import JobctlCore
import Logging
import Media
import ObjectStorage
import Queue
import SafeHTTP

extension Attempts {
    /// PUTs the finished outputs (one file, or each file of a set in turn), each on a thread of
    /// its own that stops sending within a second of the attempt being stopped — cancelled, the
    /// lease found lost, or the lease's local deadline passed without a renewal (a worker frozen
    /// mid-upload). A retry resumes with the first file not uploaded yet; each file has the
    /// whole retry budget.
    func upload(_ attempt: inout Attempt, tries: Int) async -> AttemptStateMachine.UploadOutcome {
        let execution = attempt.execution
        guard let uploads = attempt.held?.uploads, !uploads.isEmpty, let url = execution.prepared?.uploadURL else {
            return .failed(JobError(code: .internalError, message: "an upload without an output"))
        }
        if tries == 0 {
            attempt.logger.info("Uploading the output", metadata: ["job.output": "\(MediaLocation.displayed(url))"])
        }
        let (sender, lease) = (sender, execution.claimed.lease)
        var tries = tries  // retries of the file being sent: each file has the whole budget
        for file in uploads where attempt.uploaded[file.name] == nil {
            if !attempt.uploaded.isEmpty { Failpoints.hit("between-files", logger: attempt.logger) }
            if execution.shouldStopTransfer { return .stopped }
            if MediaLocation.isObjectStore(file.url) {
                switch await uploadObject(file, execution: execution, logger: attempt.logger) {
                case .uploaded(let bytes):
                    attempt.uploaded[file.name] = bytes
                    attempt.uploadTries = 0
                    tries = 0
                    continue
                case .stopped:
                    return .stopped
                // A stalled store earns one retry, not all: each waits out the stall limit.
                case .failed(let error)
                where error.isTransient && tries < (error.stalled ? 1 : options.uploadRetryDelays.count):
                    attempt.logger.warning(
                        "Upload failed; retrying",
                        metadata: ["error": "\(error.message)", "retry.in": "\(options.uploadRetryDelays[tries])"]
                    )
                    return .retry(after: options.uploadRetryDelays[tries])
                case .failed(let error):
                    var failure = ObjectStoreMedia.jobError(error, reading: false)
                    failure.message = "uploading to \(MediaLocation.displayed(file.url)) failed: \(error.message)"
                    return .failed(failure)
                }
            }
            let response: HTTPResponse
            do {
                response = try await onDedicatedThread("jobctl.upload") {
                    RemoteMedia.put(
                        file.path,
                        to: file.url,
                        contentType: file.contentType,
                        attempt: lease,
                        sender: sender
                    ) {
                        execution.shouldStopTransfer
                    }
                }
            } catch {
                return .failed(JobError(code: .internalError, message: "could not start the upload: \(error)"))
            }
            switch RemoteMedia.outcome(
                of: response,
                url: file.url,
                tries: tries,
                retryDelays: options.uploadRetryDelays
            ) {
            case .uploaded(let bytes):
                attempt.uploaded[file.name] = bytes
                attempt.uploadTries = 0
                tries = 0
            case .failed(let failure):
                return .failed(failure)
            case .stopped:
                if execution.stopReason == .leaseLost {
                    attempt.logger.warning("Lease lost during the upload: transfer stopped")
                }
                return .stopped
            case .retry(let delay, let what):
                attempt.logger.warning(
                    "Upload failed; retrying",
                    metadata: ["error": "\(what)", "retry.in": "\(delay)"]
                )
                return .retry(after: delay)
            }
        }
        return .uploaded(bytes: attempt.uploaded.values.reduce(0, +))
    }

    /// One file to an `s3://` location (`ObjectUpload`), fenced just before it is published.
    private func uploadObject(
        _ file: HeldUpload,
        execution: Execution,
        logger: Logger
    ) async -> ObjectUpload.Outcome {
        let location: S3Location
        let client: S3Client
        do {
            location = try S3Location.parse(file.url).get()
            client = try options.objectStore.client()
        } catch let error as S3Error {
            return .failed(error)
        } catch {
            return .failed(S3Error(.denied, "\(file.url): \(error)"))
        }
        let upload = ObjectUpload(
            client: client,
            file: file.path,
            location: location,
            contentType: file.contentType,
            metadata: [
                "jobctl-job": execution.claimed.lease.jobID.rawValue,
                "jobctl-attempt": "\(execution.claimed.lease.attempt)",
            ],
            shouldStop: { execution.shouldStopTransfer },
            confirm: { [self] in
                guard case .held(let cancelRequested, let late) = await fence(execution, logger: logger) else {
                    return false
                }
                return !cancelRequested && !late
            },
            beforePublish: { Failpoints.hit("before-publish", logger: logger) },
            partSent: { _ in Failpoints.hit("after-part", logger: logger) },
            journal: journal(execution.claimed.lease, logger: logger)
        )
        return await upload.run()
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
