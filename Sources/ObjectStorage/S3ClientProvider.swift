import Foundation
import Synchronization

/// The process's object store client, made on first use from the environment and the shared
/// files (`S3Client.fromEnvironment`): a worker that never sees an `s3://` location never reads
/// them, and one whose configuration is wrong says so on the job that needed it.
public final class S3ClientProvider: Sendable {
    private let make: @Sendable () throws(S3Error) -> S3Client
    private let made = Mutex<S3Client?>(nil)

    public init(_ make: @escaping @Sendable () throws(S3Error) -> S3Client) {
        self.make = make
    }

    /// From this process's environment and the user's home directory.
    public static let environment = S3ClientProvider { () throws(S3Error) in try S3Client.fromEnvironment() }

    /// The client; a configuration error is thrown again on every call (it is not cached:
    /// a credentials file written later is read then).
    public func client() throws(S3Error) -> S3Client {
        if let client = made.withLock({ $0 }) { return client }
        let client = try make()
        made.withLock { $0 = $0 ?? client }
        return made.withLock { $0! }
    }

    /// What FFmpeg can open for the object `location` (`s3://BUCKET/KEY`): a pre-signed GET
    /// URL valid for `lifetime` seconds, after a signed HEAD that turns a missing key into
    /// `notFound` and a refusal into the store's own code. A bearer credential: never store,
    /// log or show it.
    public func readableURL(for location: String, lifetime: Int = 6 * 3600) throws(S3Error) -> String {
        let object: S3Location
        switch S3Location.parse(location) {
        case .success(let parsed): object = parsed
        case .failure(let error): throw S3Error(.denied, error.reason)
        }
        let client = try client()
        guard try client.head(object) != nil else {
            throw S3Error(.notFound, "\(object) does not exist (NoSuchKey)", storeCode: "NoSuchKey")
        }
        return try client.presignedURL(object, expires: lifetime)
    }
}
