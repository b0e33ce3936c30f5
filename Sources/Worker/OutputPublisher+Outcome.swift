import Foundation
import JobKinds
import JobctlCore
import ObjectStorage
import Queue
import SafeHTTP

/// What one send of a file came to, before it is judged: each transport says it in these terms
/// (`result(of:url:)`), and one function judges them all (`outcome(of:tries:retryDelays:)`).
enum SendResult: Sendable {
    case sent(bytes: Int64)
    /// The attempt said stop, and the transfer did.
    case stopped
    case failed(PublishFailure)
}

/// Why a send failed, as the retry decision needs it.
struct PublishFailure: Sendable {
    /// Worth another try: no answer, 408, 429 or 5xx over HTTP; the store's `transient` errors
    /// (5xx, SlowDown, the network).
    var transient: Bool
    /// The destination stopped answering (no bytes moved for the stall limit): each try waits
    /// the stall out, so it earns one retry, not all.
    var stalled = false
    /// How long the destination asked to be left alone (HTTP's `Retry-After`).
    var retryAfter: Duration?
    /// What went wrong, for the log.
    var what: String
    /// The job's error when the file is not tried again, given the tries made before this one.
    var error: @Sendable (_ tries: Int) -> JobError
}

extension OutputPublisher {
    /// A `Retry-After` is honoured up to this; a longer one waits this long.
    static let longestRetryAfter: Duration = .seconds(60)

    /// The one decision for every transport, on try number `tries` (from 0) of a file: sent, or
    /// stopped, as it came; a transient failure tried again after `retryDelays[tries]` (or the
    /// destination's `Retry-After`, when longer, up to a minute) while delays are left — a
    /// stalled destination after the first only; anything else failed, with the transport's
    /// error.
    static func outcome(of result: SendResult, tries: Int, retryDelays: [Duration]) -> PublishOutcome {
        switch result {
        case .sent(let bytes):
            return .published(bytes: bytes)
        case .stopped:
            return .stopped
        case .failed(let failure):
            let retries = min(failure.stalled ? 1 : retryDelays.count, retryDelays.count)
            guard failure.transient, tries < retries else { return .failed(failure.error(tries)) }
            let asked = min(failure.retryAfter ?? .zero, longestRetryAfter)
            return .retry(after: max(retryDelays[tries], asked), what: failure.what)
        }
    }

    /// What a PUT's answer says: network failures (no final status), 408, 429 and 5xx are
    /// transient, and fail with the retryable `output_unwritable` once the retries are spent;
    /// other answers fail at once (`output_forbidden` when the guard refused the address).
    static func result(of response: HTTPResponse, url: String) -> SendResult {
        let shown = MediaLocation.displayed(url)
        if response.failed(with: .aborted) { return .stopped }
        if response.succeeded { return .sent(bytes: response.uploaded) }
        if response.failed(with: .refused) {
            let refusal = response.failure?.message ?? "refused"
            return .failed(
                PublishFailure(transient: false, what: refusal) { _ in
                    JobError(
                        code: .outputForbidden,
                        message:
                            "\(shown): \(refusal) (--allow-private-webhooks lifts this for self-hosted storage)",
                        retryable: false
                    )
                }
            )
        }
        let what =
            response.statusCode.map { "HTTP \($0)\(response.body.isEmpty ? "" : ": \(response.body.prefix(200))")" }
            ?? (response.failure?.message ?? "no response")
        let worthRetrying =
            response.statusCode.map { [408, 429].contains($0) || (500..<600).contains($0) }
            ?? !response.failed(with: .certificateRejected)
        guard worthRetrying else {
            // 4xx: an expired or wrong signature, a missing bucket; an untrusted certificate.
            // Another attempt would encode again to get the same answer.
            return .failed(
                PublishFailure(transient: false, what: what) { _ in
                    JobError(
                        code: .outputUnwritable,
                        message: "uploading to \(shown) failed (\(what))",
                        retryable: false
                    )
                }
            )
        }
        return .failed(
            PublishFailure(transient: true, stalled: response.timedOut, retryAfter: response.retryAfter, what: what) {
                tries in
                JobError(
                    code: .outputUnwritable,
                    message: "uploading to \(shown) failed \(tries + 1) times (last: \(what))",
                    retryable: true
                )
            }
        )
    }

    /// What an object store upload came to: the store's `transient` errors are tried again;
    /// every failure not tried (again) is `output_unwritable`, retryable for a passing reason
    /// (`ObjectStoreMedia.jobError`).
    static func result(of outcome: ObjectUpload.Outcome, url: String) -> SendResult {
        switch outcome {
        case .uploaded(let bytes):
            return .sent(bytes: bytes)
        case .stopped:
            return .stopped
        case .failed(let error):
            let shown = MediaLocation.displayed(url)
            return .failed(
                PublishFailure(transient: error.isTransient, stalled: error.stalled, what: error.message) { _ in
                    var failure = ObjectStoreMedia.jobError(error, reading: false)
                    failure.message = "uploading to \(shown) failed: \(error.message)"
                    return failure
                }
            )
        }
    }
}
