import Crypto
import Foundation

/// Credentials for AWS Signature Version 4: an access key id, its secret, and for temporary
/// credentials a session token and when they expire. `description` never shows the secret or
/// the token.
public struct AWSCredentials: Sendable, Hashable, CustomStringConvertible {
    public var accessKeyID: String
    public var secretAccessKey: String
    public var sessionToken: String?
    public var expiration: Date?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, expiration: Date? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.expiration = expiration
    }

    public var description: String {
        "AWSCredentials(\(accessKeyID), secret hidden\(sessionToken == nil ? "" : ", session token hidden"))"
    }
}

/// AWS Signature Version 4, as a pure function of the request, the credentials and the time:
/// the canonical request, the string to sign, the signing key and the signature
/// (docs.aws.amazon.com, "Create a signed AWS API request"). Checked against AWS's published
/// test-suite vectors and the S3 examples (Tests/ObjectStorageTests/SigV4Tests.swift).
///
/// Paths are encoded once, as S3 wants (other services encode them twice); the payload is
/// always hashed (a plain hex SHA-256, never `UNSIGNED-PAYLOAD` or chunked signing), so the
/// same requests work on AWS, R2, Ceph, MinIO and SeaweedFS.
public enum SigV4 {
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// The SHA-256 of no bytes.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// A request as the signer sees it. `path` is the raw path (`/bucket/a b.mp4`), encoded
    /// here; `query` raw names and values; `headers` every header to sign (`host` among them).
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var query: [(name: String, value: String)]
        public var headers: [(name: String, value: String)]
        public var payloadHash: String

        public init(
            method: String,
            path: String,
            query: [(name: String, value: String)] = [],
            headers: [(name: String, value: String)],
            payloadHash: String
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// Where a signature is valid: region and service (`s3`), and the time of signing.
    public struct Scope: Sendable, Hashable {
        public var region: String
        public var service: String
        public var date: Date

        public init(region: String, service: String = "s3", date: Date) {
            self.region = region
            self.service = service
            self.date = date
        }

        /// `20150830T123600Z`
        public var timestamp: String { Self.format(date, time: true) }
        /// `20150830/us-east-1/s3/aws4_request`
        public var credentialScope: String { "\(Self.format(date, time: false))/\(region)/\(service)/aws4_request" }

        static func format(_ date: Date, time: Bool) -> String {
            var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let day = String(format: "%04d%02d%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday)
            return time ? day + String(format: "T%02d%02d%02dZ", parts.tm_hour, parts.tm_min, parts.tm_sec) : day
        }
    }

    /// The canonical request and the signed header names (`host;x-amz-date`).
    public static func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        var headers: [String: [String]] = [:]
        for (name, value) in request.headers {
            headers[name.lowercased(), default: []].append(trimmed(value))
        }
        let names = headers.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(headers[$0]!.joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let text = [
            request.method,
            encode(request.path, keepingSlashes: true),
            canonicalQuery(request.query),
            canonicalHeaders,
            signedHeaders,
            request.payloadHash,
        ].joined(separator: "\n")
        return (text, signedHeaders)
    }

    /// The `Authorization` header's value for `request`.
    public static func authorization(_ request: Request, credentials: AWSCredentials, scope: Scope) -> String {
        let (canonical, signedHeaders) = canonicalRequest(request)
        let signature = signature(canonicalRequest: canonical, secret: credentials.secretAccessKey, scope: scope)
        return
            "\(algorithm) Credential=\(credentials.accessKeyID)/\(scope.credentialScope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
    }

    /// The signature (hex) of a canonical request.
    public static func signature(canonicalRequest: String, secret: String, scope: Scope) -> String {
        let stringToSign = [algorithm, scope.timestamp, scope.credentialScope, sha256Hex(Data(canonicalRequest.utf8))]
            .joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(secret)".utf8))
        for part in [Scope.format(scope.date, time: false), scope.region, scope.service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
    }

    /// The query of a pre-signed URL (`X-Amz-Algorithm` … `X-Amz-Signature`), valid for
    /// `expires` seconds from the scope's date: the request carries only the `host` header and
    /// an unsigned payload, as AWS's query-string authentication specifies.
    public static func presignedQuery(
        method: String,
        host: String,
        path: String,
        query: [(name: String, value: String)] = [],
        credentials: AWSCredentials,
        scope: Scope,
        expires: Int
    ) -> [(name: String, value: String)] {
        var signed =
            query + [
                ("X-Amz-Algorithm", algorithm),
                ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope.credentialScope)"),
                ("X-Amz-Date", scope.timestamp),
                ("X-Amz-Expires", "\(expires)"),
            ]
        if let token = credentials.sessionToken { signed.append(("X-Amz-Security-Token", token)) }
        signed.append(("X-Amz-SignedHeaders", "host"))
        let request = Request(
            method: method,
            path: path,
            query: signed,
            headers: [("host", host)],
            payloadHash: "UNSIGNED-PAYLOAD"
        )
        let signature = signature(
            canonicalRequest: canonicalRequest(request).text,
            secret: credentials.secretAccessKey,
            scope: scope
        )
        return signed + [("X-Amz-Signature", signature)]
    }

    /// `name=value&…`, sorted by encoded name then value, both encoded.
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        let encoded: [(name: String, value: String)] = query.map { (encode($0.name), encode($0.value)) }
        let sorted = encoded.sorted { (a: (name: String, value: String), b: (name: String, value: String)) -> Bool in
            a.name == b.name ? a.value < b.value : a.name < b.name
        }
        return sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters (and `/` in a path).
    public static func encode(_ text: String, keepingSlashes: Bool = false) -> String {
        var encoded = ""
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                encoded.append("/")
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return encoded
    }

    public static func sha256Hex(_ data: Data) -> String { hex(SHA256.hash(data: data)) }

    static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// A header value as signed: leading and trailing spaces removed, runs of spaces made one.
    static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }
}
