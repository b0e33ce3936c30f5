import Foundation

/// An object, or a prefix of objects, in a bucket: `s3://BUCKET/KEY`. The one parser of that
/// form for the CLI, the API, the worker and the scratch directory. It holds no secret: it is
/// shown as written.
public struct S3Location: Sendable, Hashable, CustomStringConvertible {
    public var bucket: String
    /// The object's key, or a prefix (ending in `/`, or holding `{name}` for a file set).
    public var key: String

    public init(bucket: String, key: String) {
        self.bucket = bucket
        self.key = key
    }

    public var description: String { "s3://\(bucket)/\(key)" }

    /// Whether `text` names an object store location (any case of the scheme).
    public static func isS3(_ text: String) -> Bool { text.lowercased().hasPrefix("s3://") }

    /// Why `text` is not an `s3://BUCKET/KEY` location; `nil` when it is one.
    public static func problem(with text: String) -> String? {
        switch parse(text) {
        case .success: nil
        case .failure(let error): error.reason
        }
    }

    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// Parses `s3://BUCKET/KEY`. The bucket follows S3's naming rules (3 to 63 lowercase
    /// letters, digits, dots and hyphens, starting and ending with a letter or digit); the key is
    /// 1 to 1024 bytes of UTF-8 without control characters, and never `.` or `..` as a path
    /// segment (a proxy or a file system gateway would resolve them). Credentials, a query and
    /// a fragment have no place in it.
    public static func parse(_ text: String) -> Result<S3Location, ParseError> {
        guard isS3(text) else { return .failure(ParseError(reason: "not an s3:// location")) }
        let rest = text.dropFirst("s3://".count)
        guard let slash = rest.firstIndex(of: "/") else {
            return .failure(ParseError(reason: "\(text) names a bucket but no key: s3://BUCKET/KEY"))
        }
        let bucket = String(rest[..<slash])
        let key = String(rest[rest.index(after: slash)...])
        if let problem = bucketProblem(bucket) { return .failure(ParseError(reason: "\(text): \(problem)")) }
        if key.isEmpty { return .failure(ParseError(reason: "\(text) names a bucket but no key: s3://BUCKET/KEY")) }
        if key.utf8.count > 1024 { return .failure(ParseError(reason: "\(text): a key is at most 1024 bytes")) }
        if key.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            return .failure(ParseError(reason: "\(text): a key cannot hold control characters"))
        }
        // By bytes: split by Characters, a combining mark after a `/` would hide a `..` segment.
        let segments = key.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        if segments.contains(where: { $0.elementsEqual(".".utf8) || $0.elementsEqual("..".utf8) }) {
            return .failure(ParseError(reason: "\(text): a key cannot have . or .. segments"))
        }
        if key.hasPrefix("/") { return .failure(ParseError(reason: "\(text): a key cannot start with /")) }
        if key.contains("?") || key.contains("#") {
            return .failure(ParseError(reason: "\(text): a key cannot hold ? or # (an s3:// location has no query)"))
        }
        return .success(S3Location(bucket: bucket, key: key))
    }

    static func bucketProblem(_ bucket: String) -> String? {
        if bucket.contains("@") || bucket.contains(":") {
            return "credentials do not belong in an s3:// location (use AWS_ACCESS_KEY_ID or a profile)"
        }
        guard (3...63).contains(bucket.count) else { return "a bucket name is 3 to 63 characters" }
        let allowed = bucket.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "-"
        }
        guard allowed else { return "a bucket name holds lowercase letters, digits, dots and hyphens only" }
        let ends = [bucket.unicodeScalars.first!, bucket.unicodeScalars.last!]
        guard ends.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) }) else {
            return "a bucket name starts and ends with a letter or a digit"
        }
        if bucket.contains("..") { return "a bucket name has no two dots in a row" }
        return nil
    }

    /// The object `name` under this prefix: `{name}` replaced, or `name` appended to a key
    /// ending in `/`.
    public func object(named name: String) -> S3Location {
        if key.contains("{name}") {
            return S3Location(bucket: bucket, key: key.replacingOccurrences(of: "{name}", with: name))
        }
        return S3Location(bucket: bucket, key: key.hasSuffix("/") ? key + name : key + "/" + name)
    }
}
