import Foundation
import Media
import Queue
import Webhooks

/// A failure with the job error it becomes, retryability included (remote media decides it
/// from the HTTP status, not from the code alone).
struct JobFailure: Error {
    let error: JobError
}

/// `http(s)://` inputs and outputs (SPEC §4, §6): the address guard before FFmpeg reads an
/// input, and the upload of a finished output with PUT.
enum RemoteMedia {
    static func isRemote(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// Asks for the input's first byte through the guarded sender before FFmpeg opens it: the
    /// address guard runs on the address connected to, and the answer gives a precise error
    /// (404 → `input_not_found`, a redirect or 403 → `input_unreadable`, 5xx or no answer →
    /// retried later). FFmpeg then resolves the name again for its own connections: see
    /// docs/security.md for that window.
    static func checkInput(_ url: String, sender: HTTPSender) throws(JobFailure) {
        let shown = JobRequest.displayURL(url)
        let response = sender.send(HTTPRequest(url: url, method: .get(range: 0...0)))
        if response.refused {
            throw JobFailure(error: JobError(
                code: "input_unreadable",
                message: "\(shown): \(response.error ?? "refused") (--allow-private-webhooks lifts this for self-hosted media)",
                retryable: false
            ))
        }
        guard let status = response.statusCode else {
            throw JobFailure(error: JobError(
                code: "input_unreadable", message: "\(shown) could not be fetched (\(response.error ?? "no response"))", retryable: !response.certificateRejected
            ))
        }
        switch status {
        case 200..<300:
            return
        case 404, 410:
            throw JobFailure(error: JobError(code: "input_not_found", message: "\(shown) does not exist (HTTP \(status))", retryable: false))
        case 300..<400:
            throw JobFailure(error: JobError(code: "input_unreadable", message: "\(shown) answered HTTP \(status): redirects are not followed; submit the final URL", retryable: false))
        case 408, 429, 500..<600:
            throw JobFailure(error: JobError(code: "input_unreadable", message: "\(shown) could not be fetched (HTTP \(status))", retryable: true))
        default:
            throw JobFailure(error: JobError(code: "input_unreadable", message: "\(shown) cannot be read (HTTP \(status))", retryable: false))
        }
    }

    /// Uploads `file` to `url` with PUT, retrying network failures, 408, 429 and 5xx after each
    /// of `retryDelays` (a `Retry-After` up to a minute is honoured). Other answers fail at once.
    /// Returns the bytes sent; throws `output_forbidden` (the guard refused the address),
    /// `output_unwritable`, or `MediaError.cancelled()` when `shouldStop` said so.
    static func upload(
        _ file: String, to url: String, contentType: String, sender: HTTPSender, retryDelays: [Duration],
        shouldStop: @escaping @Sendable () -> Bool, log: (String) -> Void
    ) throws -> Int64 {
        let shown = JobRequest.displayURL(url)
        var attempt = 0
        while true {
            if shouldStop() { throw MediaError.cancelled() }
            let response = sender.send(HTTPRequest(url: url, method: .put(file: file, contentType: contentType)), shouldAbort: shouldStop)
            if response.aborted || shouldStop() { throw MediaError.cancelled() }
            if response.succeeded { return response.uploaded }
            if response.refused {
                throw JobFailure(error: JobError(
                    code: "output_forbidden",
                    message: "\(shown): \(response.error ?? "refused") (--allow-private-webhooks lifts this for self-hosted storage)",
                    retryable: false
                ))
            }
            let what = response.statusCode.map { "HTTP \($0)\(response.body.isEmpty ? "" : ": \(response.body.prefix(200))")" } ?? (response.error ?? "no response")
            let worthRetrying = response.statusCode.map { [408, 429].contains($0) || (500..<600).contains($0) } ?? !response.certificateRejected
            guard worthRetrying else {
                // 4xx: an expired or wrong signature, a missing bucket; an untrusted certificate.
                // Another attempt would encode again to get the same answer.
                throw JobFailure(error: JobError(code: "output_unwritable", message: "uploading to \(shown) failed (\(what))", retryable: false))
            }
            guard attempt < retryDelays.count else {
                throw JobFailure(error: JobError(
                    code: "output_unwritable", message: "uploading to \(shown) failed \(attempt + 1) times (last: \(what))", retryable: true
                ))
            }
            let delay = max(retryDelays[attempt], min(response.retryAfter ?? .zero, .seconds(60)))
            log("Upload failed (\(what)); retrying in \(delay)")
            attempt += 1
            let deadline = ContinuousClock.now + delay
            while ContinuousClock.now < deadline {
                if shouldStop() { throw MediaError.cancelled() }
                Thread.sleep(forTimeInterval: min(0.1, max(0, Double((deadline - ContinuousClock.now).milliseconds) / 1000)))
            }
        }
    }

    /// The local file an export to `url` is written to before its upload:
    /// `STAGING/JOBID.EXT`, the extension from the URL's path (else the format's).
    static func stagingPath(for url: String, jobID: JobID, format: ContainerFormat?, preset: Preset, directory: String) -> String {
        let pathExtension = URL(string: url).map { ($0.path as NSString).pathExtension.lowercased() } ?? ""
        let ext = format?.fileExtension ?? (ContainerFormat(pathExtension: pathExtension) != nil ? pathExtension : preset.format.fileExtension)
        return (directory as NSString).appendingPathComponent("\(jobID).\(ext)")
    }

    static func contentType(of format: ContainerFormat) -> String {
        switch format {
        case .mp4: return "video/mp4"
        case .mov: return "video/quicktime"
        case .m4a: return "audio/mp4"
        }
    }
}

extension Duration {
    fileprivate var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
