import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP

/// `http(s)://` inputs and outputs (docs/spec.md §4, §6): the address guard before FFmpeg reads an
/// input, and the PUT of a finished output (the worker's `OutputPublisher` judges its answer).
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
