import Foundation
import JobKinds
import JobctlCore
import ObjectStorage
import Queue
import SafeHTTP

/// Sending one file, by transport: each says what came of it as a `SendResult`, which
/// `OutputPublisher.outcome(of:tries:retryDelays:)` judges.
extension OutputPublisher {
    /// One PUT of `file` on a thread of its own (libcurl blocks), with the headers that tell a
    /// storage proxy which attempt wrote it; it stops sending within a second of `shouldStop`.
    func put(_ file: HeldUpload, sender: HTTPSender, for attempt: PublishingAttempt) async -> SendResult {
        let (lease, shouldStop) = (attempt.lease, attempt.shouldStop)
        let response: HTTPResponse
        do {
            response = try await onDedicatedThread("jobctl.upload") {
                RemoteMedia.put(
                    file.path,
                    to: file.url,
                    contentType: file.contentType,
                    attempt: lease,
                    sender: sender,
                    shouldAbort: shouldStop
                )
            }
        } catch {
            return .failed(
                PublishFailure(transient: false, what: "\(error)") { _ in
                    JobError(code: .internalError, message: "could not start the upload: \(error)")
                }
            )
        }
        return Self.result(of: response, url: file.url)
    }

    /// One file to an `s3://` location (`ObjectUpload`), fenced just before it is published,
    /// with the client `clients` makes (a configuration error fails the file as the store's
    /// refusal would).
    func putObject(_ file: HeldUpload, clients: S3ClientProvider, for attempt: PublishingAttempt) async -> SendResult {
        let location: S3Location
        let client: S3Client
        do {
            location = try S3Location.parse(file.url).get()
            client = try clients.client()
        } catch let error as S3Error {
            return Self.result(of: .failed(error), url: file.url)
        } catch {
            return Self.result(of: .failed(S3Error(.denied, "\(file.url): \(error)")), url: file.url)
        }
        let logger = attempt.logger
        let upload = ObjectUpload(
            client: client,
            file: file.path,
            location: location,
            contentType: file.contentType,
            metadata: [
                "jobctl-job": attempt.lease.jobID.rawValue,
                "jobctl-attempt": "\(attempt.lease.attempt)",
            ],
            shouldStop: attempt.shouldStop,
            confirm: attempt.confirm,
            beforePublish: { Failpoints.hit("before-publish", logger: logger) },
            partSent: { _ in Failpoints.hit("after-part", logger: logger) },
            journal: attempt.journal
        )
        return Self.result(of: await upload.run(), url: file.url)
    }
}
