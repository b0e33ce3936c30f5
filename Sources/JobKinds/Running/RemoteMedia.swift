import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP

/// `http(s)://` inputs and outputs (docs/spec.md §4, §6): the address guard before FFmpeg reads an
/// input, and the upload of a finished output with PUT.
package enum RemoteMedia {
    /// Asks for the input's first byte through the guarded sender before FFmpeg opens it: the
    /// address guard runs on the address connected to, and the answer gives a precise error
    /// (404 → `input_not_found`, a redirect or 403 → `input_unreadable`, 5xx or no answer →
    /// retried later). FFmpeg then resolves the name again for its own connections: see
    /// docs/security.md for that window.
    package static func checkInput(_ url: String, sender: HTTPSender) throws(JobError) {
        let shown = MediaLocation.displayed(url)
        let response = sender.send(HTTPRequest(url: url, method: .get(range: 0...0)))
        if response.failed(with: .refused) {
            throw JobError(
                code: .inputUnreadable,
                message:
                    "\(shown): \(response.failure?.message ?? "refused") (--allow-private-webhooks lifts this for self-hosted media)",
                retryable: false
            )
        }
        guard let status = response.statusCode else {
            throw JobError(
                code: .inputUnreadable,
                message: "\(shown) could not be fetched (\(response.failure?.message ?? "no response"))",
                retryable: !response.failed(with: .certificateRejected)
            )
        }
        switch status {
        case 200..<300:
            return
        case 404, 410:
            throw JobError(
                code: .inputNotFound,
                message: "\(shown) does not exist (HTTP \(status))",
                retryable: false
            )
        case 300..<400:
            throw JobError(
                code: .inputUnreadable,
                message: "\(shown) answered HTTP \(status): redirects are not followed; submit the final URL",
                retryable: false
            )
        case 408, 429, 500..<600:
            throw JobError(
                code: .inputUnreadable,
                message: "\(shown) could not be fetched (HTTP \(status))",
                retryable: true
            )
        default:
            throw JobError(
                code: .inputUnreadable,
                message: "\(shown) cannot be read (HTTP \(status))",
                retryable: false
            )
        }
    }

    /// What one PUT came to.
    package enum UploadOutcome: Sendable {
        case uploaded(bytes: Int64)
        /// Worth another try after `delay` (a network failure, 408, 429, 5xx); `what` for logs.
        case retry(after: Duration, what: String)
        case failed(JobError)
        /// `shouldAbort` said stop (cancelled, or the lease may be lost).
        case stopped
    }

    /// One PUT of `file` to `url`, with the headers that tell a storage proxy which attempt
    /// wrote it. Blocking: call it from a thread of its own. `shouldAbort` is asked before
    /// every chunk of the body and at least once a second.
    package static func put(
        _ file: String,
        to url: String,
        contentType: String,
        attempt: Lease,
        sender: HTTPSender,
        shouldAbort: @escaping @Sendable () -> Bool
    ) -> HTTPResponse {
        let headers = [("Jobctl-Job", attempt.jobID.rawValue), ("Jobctl-Attempt", "\(attempt.attempt)")]
        return sender.send(
            HTTPRequest(url: url, method: .put(file: file, contentType: contentType), headers: headers),
            shouldAbort: shouldAbort
        )
    }

    /// Classifies the answer to attempt number `tries` (from 0) of an upload: network
    /// failures (no final status), 408, 429 and 5xx are retried after each of `retryDelays` (a
    /// `Retry-After` up to a minute is honoured), then fail with the retryable
    /// `output_unwritable`; other answers fail at once (`output_forbidden` when the guard
    /// refused the address).
    package static func outcome(
        of response: HTTPResponse,
        url: String,
        tries: Int,
        retryDelays: [Duration]
    ) -> UploadOutcome {
        let shown = MediaLocation.displayed(url)
        if response.failed(with: .aborted) { return .stopped }
        if response.succeeded { return .uploaded(bytes: response.uploaded) }
        if response.failed(with: .refused) {
            return .failed(
                JobError(
                    code: .outputForbidden,
                    message:
                        "\(shown): \(response.failure?.message ?? "refused") (--allow-private-webhooks lifts this for self-hosted storage)",
                    retryable: false
                )
            )
        }
        let what =
            response.statusCode.map { "HTTP \($0)\(response.body.isEmpty ? "" : ": \(response.body.prefix(200))")" }
            ?? (response.failure?.message ?? "no response")
        let worthRetrying =
            response.statusCode.map { [408, 429].contains($0) || (500..<600).contains($0) } ?? !response.failed(
                with: .certificateRejected
            )
        guard worthRetrying else {
            // 4xx: an expired or wrong signature, a missing bucket; an untrusted certificate.
            // Another attempt would encode again to get the same answer.
            return .failed(
                JobError(
                    code: .outputUnwritable,
                    message: "uploading to \(shown) failed (\(what))",
                    retryable: false
                )
            )
        }
        // A destination that stalled (no bytes moving for the stall limit) earns one retry: each
        // try waits the stall out, and three of them tied a worker up for minutes.
        guard tries < (response.timedOut ? 1 : retryDelays.count) else {
            return .failed(
                JobError(
                    code: .outputUnwritable,
                    message: "uploading to \(shown) failed \(tries + 1) times (last: \(what))",
                    retryable: true
                )
            )
        }
        return .retry(after: max(retryDelays[tries], min(response.retryAfter ?? .zero, .seconds(60))), what: what)
    }

    /// The local file an export to `url` is written to before its upload:
    /// `STAGING/JOBID.EXT`, the extension from the URL's path (else the format's).
    static func stagingPath(
        for url: String,
        jobID: JobID,
        format: ContainerFormat?,
        preset: Preset,
        directory: String
    ) -> String {
        let pathExtension = URL(string: url).map { ($0.path as NSString).pathExtension.lowercased() } ?? ""
        let ext =
            format?.fileExtension
            ?? (ContainerFormat(pathExtension: pathExtension) != nil ? pathExtension : preset.format.fileExtension)
        return (directory as NSString).appendingPathComponent("\(jobID).\(ext)")
    }

    /// Creates the worker's staging directory (owner only) if missing.
    static func createStagingDirectory(_ path: String) throws(JobError) {
        do {
            try FileManager.default.createDirectory(
                atPath: path,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw JobError(
                code: .outputUnwritable,
                message: "the staging directory \(path) cannot be created (\(error.localizedDescription))"
            )
        }
    }

    static func contentType(of format: ContainerFormat) -> String {
        ContentType.upload("output.\(format.fileExtension)")
    }
}
