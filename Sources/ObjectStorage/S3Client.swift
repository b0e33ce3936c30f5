import Crypto
import Foundation
import SafeHTTP

/// The object store operations jobctl uses, signed with SigV4 and sent through libcurl
/// (`HTTPSender`). Blocking: call them from a thread of their own. The endpoint is the
/// operator's choice, so its address is not guarded; the locations in it are the users'.
public final class S3Client: Sendable {
    public let configuration: S3Configuration
    public let credentials: CredentialChain
    let sender: HTTPSender
    private let now: @Sendable () -> Date

    public init(
        configuration: S3Configuration,
        credentials: CredentialChain,
        sender: HTTPSender? = nil,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.configuration = configuration
        self.credentials = credentials
        self.sender =
            sender
            ?? HTTPSender(
                policy: AddressPolicy(allowPrivate: true),
                timeout: .seconds(60),
                connectTimeout: .seconds(10),
                stallLimit: Self.stallLimit,
                responseLimit: 4 << 20
            )
        self.now = now
    }

    /// Less than 1 KiB a second for 15 s is a stall (a PUT has no overall limit: files are large).
    public static let stallLimit: (bytes: Int, time: Duration) = (1024, .seconds(15))

    /// A client configured as the AWS tools would be, from `environment` and the shared files
    /// under `home`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        home: String = NSHomeDirectory()
    ) throws(S3Error) -> S3Client {
        let files = try SharedConfigFiles.load(environment: environment, home: home)
        return S3Client(
            configuration: try S3Configuration.resolve(environment: environment, files: files),
            credentials: try CredentialChain(environment: environment, files: files)
        )
    }

    // MARK: - Requests

    /// What a request sends besides its signature.
    struct Call {
        var method: String
        var location: S3Location
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var payloadHash = SigV4.emptyPayloadHash
        var body: HTTPRequest.Method
    }

    /// Signs and sends `call`; a response that is not 2xx becomes an `S3Error`.
    func perform(_ call: Call, shouldAbort: (@Sendable () -> Bool)? = nil) throws(S3Error) -> HTTPResponse {
        let credentials = try credentials.credentials()
        let (scheme, host, path) = configuration.address(bucket: call.location.bucket, key: call.location.key)
        let scope = SigV4.Scope(region: configuration.region, date: now())
        var headers =
            call.headers + [
                ("Host", host), ("x-amz-date", scope.timestamp), ("x-amz-content-sha256", call.payloadHash),
            ]
        if let token = credentials.sessionToken { headers.append(("x-amz-security-token", token)) }
        let signable = SigV4.Request(
            method: call.method,
            path: path,
            query: call.query,
            headers: headers,
            payloadHash: call.payloadHash
        )
        headers.append(("Authorization", SigV4.authorization(signable, credentials: credentials, scope: scope)))
        let query = SigV4.canonicalQuery(call.query)
        let url = "\(scheme)://\(host)\(SigV4.encode(path, keepingSlashes: true))" + (query.isEmpty ? "" : "?\(query)")
        let response = sender.send(HTTPRequest(url: url, method: call.body, headers: headers), shouldAbort: shouldAbort)
        if response.succeeded { return response }
        throw Self.error(response, location: call.location, method: call.method)
    }

    /// The store's answer as an error: its code and message from the XML body (or the status
    /// for a HEAD), classified by what another try could change.
    static func error(_ response: HTTPResponse, location: S3Location, method: String) -> S3Error {
        if response.failed(with: .aborted) { return S3Error(.stopped, "\(location): stopped") }
        if let status = response.statusCode, (200..<300).contains(status), let failure = response.failure {
            // The answer began (2xx) and broke off: the network, a stall, a full disk.
            var error = S3Error(
                .transient,
                "\(location): the transfer broke off (\(failure.message)) (HTTP \(status) to \(method))"
            )
            error.stalled = response.timedOut
            return error
        }
        guard let status = response.statusCode else {
            let denied = response.failed(with: .certificateRejected) || response.failed(with: .refused)
            var error = S3Error(
                denied ? .denied : .transient,
                "\(location): the object store could not be reached (\(response.failure?.message ?? "no response"))"
            )
            error.stalled = response.timedOut
            return error
        }
        let storeCode = XMLText.first("Code", in: response.body)
        let storeMessage = XMLText.first("Message", in: response.body)
        let named = storeCode ?? (status == 404 ? "NotFound" : nil)
        let detail = [named, storeMessage].compactMap { $0 }.joined(separator: ": ")
        let text = "\(location): \(detail.isEmpty ? "" : "\(detail) ")(HTTP \(status) to \(method))"
        let transientCodes: Set<String> = [
            "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "ExpiredToken", "TokenRefreshRequired",
            "RequestTimeTooSkewed", "ConditionalRequestConflict", "OperationAborted",
        ]
        let code: S3Error.Code =
            switch status {
            case 404: .notFound
            case 412: .preconditionFailed
            case 408, 409, 429, 500..<600: .transient
            default: storeCode.map(transientCodes.contains) == true ? .transient : .denied
            }
        if (300..<400).contains(status) {
            return S3Error(
                code,
                "\(text): the bucket answers elsewhere (another region: set AWS_REGION, or AWS_ENDPOINT_URL)",
                storeCode: storeCode
            )
        }
        return S3Error(code, text, storeCode: storeCode)
    }

    // MARK: - Objects

    /// An object's size and ETag (quotes removed); `nil` when there is none.
    public struct ObjectInfo: Sendable, Hashable {
        public var size: Int64
        public var etag: String
        /// The object's user metadata (`x-amz-meta-NAME`), names in lowercase without the prefix.
        public var metadata: [String: String]
        /// `Content-Type`, as the store answers a HEAD.
        public var contentType: String?

        public init(size: Int64, etag: String, metadata: [String: String] = [:]) {
            self.size = size
            self.etag = etag
            self.metadata = metadata
        }
    }

    public func head(_ location: S3Location) throws(S3Error) -> ObjectInfo? {
        do throws(S3Error) {
            let response = try perform(Call(method: "HEAD", location: location, body: .head))
            var metadata: [String: String] = [:]
            for (name, value) in response.headers where name.hasPrefix("x-amz-meta-") {
                metadata[String(name.dropFirst("x-amz-meta-".count))] = value
            }
            var info = ObjectInfo(
                size: Int64(response.headers["content-length"] ?? "") ?? 0,
                etag: Self.unquoted(response.headers["etag"] ?? ""),
                metadata: metadata
            )
            info.contentType = response.headers["content-type"]
            return info
        } catch  where error.code == .notFound {
            return nil
        } catch  where error.storeCode == nil && error.code == .denied {
            // A HEAD's answer has no body: a GET of its first byte says which refusal it is
            // (SignatureDoesNotMatch, AccessDenied…).
            _ = try get(location, range: 0...0)
            throw error
        }
    }

    /// The first bytes of an object (at most the sender's response limit): for small objects
    /// and for checking that an input can be read.
    public func get(_ location: S3Location, range: ClosedRange<Int64>? = nil) throws(S3Error) -> Data {
        var headers: [(name: String, value: String)] = []
        if let range { headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        let response = try perform(Call(method: "GET", location: location, headers: headers, body: .get(range: nil)))
        return response.data
    }

    /// The whole object into the file `path` (created or replaced), in bounded memory; its
    /// size. A failed download may leave a partial file: the caller removes it.
    @discardableResult
    public func download(
        _ location: S3Location,
        to path: String,
        shouldAbort: (@Sendable () -> Bool)? = nil
    ) throws(S3Error) -> Int64 {
        let response = try perform(
            Call(method: "GET", location: location, body: .download(to: path)),
            shouldAbort: shouldAbort
        )
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
        guard let size else { throw S3Error(.failed, "\(location): the download into \(path) vanished") }
        if let expected = response.headers["content-length"].flatMap({ Int64($0) }), expected != size {
            throw S3Error(.transient, "\(location): \(size) of \(expected) bytes arrived")
        }
        return size
    }

    /// Who may write: `none` always; `absent` only when there is no such object yet
    /// (`If-None-Match: *`); `unchanged(etag)` only over that version (`If-Match`).
    public enum WriteCondition: Sendable, Hashable {
        case none
        case absent
        case unchanged(etag: String)

        var headers: [(name: String, value: String)] {
            switch self {
            case .none: []
            case .absent: [("If-None-Match", "*")]
            case .unchanged(let etag): [("If-Match", "\"\(etag)\"")]
            }
        }
    }

    /// One PUT of the bytes `range` of `file` (all of it by default); the object's ETag.
    public func putObject(
        file: String,
        range: Range<Int64>? = nil,
        to location: S3Location,
        contentType: String?,
        condition: WriteCondition = .none,
        metadata: [String: String] = [:],
        shouldAbort: (@Sendable () -> Bool)? = nil
    ) throws(S3Error) -> String {
        let digest = try FileDigest.of(file, range: range)
        let response = try perform(
            Call(
                method: "PUT",
                location: location,
                headers: condition.headers + Self.metadataHeaders(metadata),
                payloadHash: digest.sha256,
                body: .put(file: file, contentType: contentType, range: range)
            ),
            shouldAbort: shouldAbort
        )
        return Self.unquoted(response.headers["etag"] ?? "")
    }

    public func deleteObject(_ location: S3Location) throws(S3Error) {
        do {
            _ = try perform(Call(method: "DELETE", location: location, body: .delete))
        } catch  where error.code == .notFound {
        }
    }

    /// An object in a listing.
    public struct ObjectSummary: Sendable, Hashable {
        public var key: String
        public var size: Int64
        public var etag: String
    }

    /// Every object whose key starts with `prefix` (ListObjectsV2, page after page).
    public func listObjects(bucket: String, prefix: String) throws(S3Error) -> [ObjectSummary] {
        var found: [ObjectSummary] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try perform(
                Call(method: "GET", location: S3Location(bucket: bucket, key: ""), query: query, body: .get(range: nil))
            )
            for entry in XMLText.all("Contents", in: response.body) {
                guard let key = XMLText.first("Key", in: entry) else { continue }
                found.append(
                    ObjectSummary(
                        key: XMLText.unescaped(key),
                        size: Int64(XMLText.first("Size", in: entry) ?? "") ?? 0,
                        etag: Self.unquoted(XMLText.unescaped(XMLText.first("ETag", in: entry) ?? ""))
                    )
                )
            }
            token =
                XMLText.first("IsTruncated", in: response.body) == "true"
                ? XMLText.first("NextContinuationToken", in: response.body).map(XMLText.unescaped) : nil
        } while token != nil
        return found
    }

    /// A URL anyone holding it may GET for `expires` seconds (FFmpeg reads `s3://` inputs
    /// through one): query-string authentication. Never shown: it is a bearer credential.
    public func presignedURL(_ location: S3Location, expires: Int) throws(S3Error) -> String {
        let credentials = try credentials.credentials()
        let (scheme, host, path) = configuration.address(bucket: location.bucket, key: location.key)
        let scope = SigV4.Scope(region: configuration.region, date: now())
        // Temporary credentials end the URL's life when they expire.
        let lifetime = credentials.expiration.map { min(expires, max(60, Int($0.timeIntervalSince(now())))) } ?? expires
        let query = SigV4.presignedQuery(
            method: "GET",
            host: host,
            path: path,
            credentials: credentials,
            scope: scope,
            expires: min(lifetime, 604_800)
        )
        return "\(scheme)://\(host)\(SigV4.encode(path, keepingSlashes: true))?\(SigV4.canonicalQuery(query))"
    }

    /// `x-amz-meta-NAME` headers (names in lowercase: S3 keeps them so).
    static func metadataHeaders(_ metadata: [String: String]) -> [(name: String, value: String)] {
        metadata.sorted { $0.key < $1.key }.map { ("x-amz-meta-\($0.key.lowercased())", $0.value) }
    }

    static func unquoted(_ etag: String) -> String {
        etag.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
    }
}

/// Just enough XML for S3's answers: the text of elements by name (no attributes, no nesting
/// of the same name), and the five predefined entities.
enum XMLText {
    static func all(_ name: String, in xml: String) -> [String] {
        var found: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<\(name)>"), let close = rest[open.upperBound...].range(of: "</\(name)>") {
            found.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return found
    }

    static func first(_ name: String, in xml: String) -> String? { all(name, in: xml).first }

    /// The predefined entities and numeric references (`&#34;`, `&#x22;`: SeaweedFS quotes
    /// ETags so).
    static func unescaped(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";"), rest.distance(from: amp, to: semicolon) <= 10 else {
                result += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let name = rest[rest.index(after: amp)..<semicolon]
            let named = ["quot": "\"", "apos": "'", "lt": "<", "gt": ">", "amp": "&"][String(name)]
            var scalar: UnicodeScalar?
            if name.hasPrefix("#x") || name.hasPrefix("#X") {
                scalar = UInt32(name.dropFirst(2), radix: 16).flatMap(UnicodeScalar.init)
            } else if name.hasPrefix("#") {
                scalar = UInt32(name.dropFirst()).flatMap(UnicodeScalar.init)
            }
            if let replacement = named ?? scalar.map({ String(Character($0)) }) {
                result += replacement
                rest = rest[rest.index(after: semicolon)...]
            } else {
                result += "&"
                rest = rest[rest.index(after: amp)...]
            }
        }
        return result + rest
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
