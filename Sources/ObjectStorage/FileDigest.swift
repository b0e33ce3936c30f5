import Crypto
import Foundation

/// The SHA-256 (for the signature) and MD5 (an S3 ETag) of a file or of a range of it, in one
/// pass of 1 MiB reads.
public struct FileDigest: Sendable, Hashable {
    public var sha256: String
    public var md5: String
    public var size: Int64

    /// The SHA-256 of a whole file alone (what a split export's parts are recognised by).
    public static func sha256(of path: String) throws(S3Error) -> String {
        try of(path, md5: false).sha256
    }

    public static func of(_ path: String, range: Range<Int64>? = nil) throws(S3Error) -> FileDigest {
        try of(path, range: range, md5: true)
    }

    private static func of(_ path: String, range: Range<Int64>? = nil, md5 wanted: Bool) throws(S3Error) -> FileDigest {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw S3Error(.failed, "\(path) cannot be read") }
        defer { try? handle.close() }
        var sha = SHA256()
        var md5 = Insecure.MD5()
        var remaining = range.map { Int64($0.count) } ?? .max
        var size: Int64 = 0
        do {
            if let range { try handle.seek(toOffset: UInt64(range.lowerBound)) }
            while remaining > 0 {
                guard let chunk = try handle.read(upToCount: Int(min(remaining, 1 << 20))), !chunk.isEmpty else {
                    break
                }
                sha.update(data: chunk)
                if wanted { md5.update(data: chunk) }
                remaining -= Int64(chunk.count)
                size += Int64(chunk.count)
            }
        } catch {
            throw S3Error(.failed, "\(path) cannot be read: \(error.localizedDescription)")
        }
        if let range, size != Int64(range.count) { throw S3Error(.failed, "\(path) is shorter than \(range)") }
        return FileDigest(sha256: SigV4.hex(sha.finalize()), md5: wanted ? SigV4.hex(md5.finalize()) : "", size: size)
    }
}
