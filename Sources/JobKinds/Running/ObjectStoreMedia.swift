import Foundation
import JobctlCore
import Media
import ObjectStorage
import Queue
import SafeHTTP

/// `s3://` inputs (docs/spec.md §4): the object asked about with a signed HEAD, so that a
/// missing key or a refused request gets a precise error before anything is decoded, then read
/// by FFmpeg through a pre-signed GET URL (its ranged reads, read-ahead and reconnects, as for any
/// `https` input). The URL is a bearer credential: it is never stored, logged or shown; the
/// asset's name is the `s3://` location.
package enum ObjectStoreMedia {
    /// How long a pre-signed input URL lives (an export that reads for longer fails with
    /// `input_unreadable`, retryable, and its next attempt gets a new URL). Temporary
    /// credentials shorten it to their own life.
    static let inputURLLifetime = 6 * 3600

    /// What FFmpeg opens for `location`: a local path or an `http(s)` URL (checked by the
    /// address guard) as they are; for `s3://`, a pre-signed URL to the object.
    package static func openable(_ location: String, context: RunContext) throws(JobError) -> String {
        if MediaLocation.isHTTP(location) {
            try RemoteMedia.checkInput(location, sender: context.sender)
            return location
        }
        guard MediaLocation.isObjectStore(location) else { return location }
        do {
            return try context.objectStore.readableURL(for: location, lifetime: inputURLLifetime)
        } catch {
            throw jobError(error, reading: true)
        }
    }

    /// An object store failure as the job's error: reading an input, or writing an output.
    /// Another try is worth it for a transient failure (5xx, SlowDown, the network), a lost
    /// conditional write, and missing credentials (a metadata endpoint that did not answer, a
    /// credentials file not written yet); not for a refusal (a wrong secret, a missing bucket,
    /// a denied request), which would only encode again to be refused again.
    package static func jobError(_ error: S3Error, reading: Bool) -> JobError {
        let retryable = [.transient, .preconditionFailed, .credentials].contains(error.code)
        switch (error.code, reading) {
        case (.notFound, true):
            return JobError(code: .inputNotFound, message: error.message, retryable: false)
        case (_, true):
            return JobError(code: .inputUnreadable, message: error.message, retryable: retryable)
        case (_, false):
            return JobError(code: .outputUnwritable, message: error.message, retryable: retryable)
        }
    }
}
