import Foundation
import JobctlCore
import Media
import ObjectStorage

/// An `s3://` input of a command that runs in this process (`export`, `probe`, `thumbnails`,
/// `storyboard`, `waveform`): asked about with a signed HEAD, then read through a pre-signed
/// URL, with this shell's AWS configuration, as a worker would. Anything else as it is.
enum ObjectStoreInput {
    static func openable(_ input: String) throws(MediaError) -> String {
        guard MediaLocation.isObjectStore(input) else { return input }
        do {
            return try S3ClientProvider.environment.readableURL(for: input)
        } catch {
            throw MediaError(error.code == .notFound ? .inputNotFound : .inputUnreadable, error.message)
        }
    }
}
