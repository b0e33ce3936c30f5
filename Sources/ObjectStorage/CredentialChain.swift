import Foundation
import SafeHTTP
import Synchronization

/// Where a worker's AWS credentials come from, in the order the AWS SDKs look: the environment
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), the profile of the shared
/// files (`AWS_PROFILE`), the container credentials endpoint (`AWS_CONTAINER_CREDENTIALS_FULL_URI`
/// or `…_RELATIVE_URI`, with `AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]`), then the EC2 instance
/// metadata service (IMDSv2: a session token first; `AWS_EC2_METADATA_SERVICE_ENDPOINT` moves it,
/// `AWS_EC2_METADATA_DISABLED=true` turns it off). Temporary credentials are fetched again five
/// minutes before they expire. Never logged: `AWSCredentials` hides its secret.
public final class CredentialChain: Sendable {
    enum Source: Sendable, Hashable {
        case fixed(AWSCredentials, from: String)
        case container(url: String, token: String?, tokenFile: String?)
        case instanceMetadata(endpoint: String)
    }

    let sources: [Source]
    private let sender: HTTPSender
    private let now: @Sendable () -> Date
    private let cached = Mutex<AWSCredentials?>(nil)
    /// How long before their expiry temporary credentials are fetched again.
    static let refreshMargin: TimeInterval = 300

    init(sources: [Source], sender: HTTPSender, now: @escaping @Sendable () -> Date = Date.init) {
        self.sources = sources
        self.sender = sender
        self.now = now
    }

    /// The chain the environment and the shared files describe. `sender` reaches the metadata
    /// endpoints (link-local and loopback addresses: the operator's own, so not guarded).
    public convenience init(
        environment: [String: String],
        files: SharedConfigFiles,
        now: @escaping @Sendable () -> Date = Date.init
    ) throws(S3Error) {
        var sources: [Source] = []
        let id = environment["AWS_ACCESS_KEY_ID"].flatMap { $0.isEmpty ? nil : $0 }
        let secret = environment["AWS_SECRET_ACCESS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        switch (id, secret) {
        case (let id?, let secret?):
            let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            sources.append(
                .fixed(
                    AWSCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token),
                    from: "environment"
                )
            )
        case (.some, nil), (nil, .some):
            throw S3Error(
                .credentials,
                "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: only \(id == nil ? "the secret" : "the key id") is set"
            )
        case (nil, nil):
            break
        }
        let profile = files.settings
        if let id = profile["aws_access_key_id"], let secret = profile["aws_secret_access_key"] {
            let credentials = AWSCredentials(
                accessKeyID: id,
                secretAccessKey: secret,
                sessionToken: profile["aws_session_token"]
            )
            sources.append(.fixed(credentials, from: "profile \(files.profile)"))
        }
        if let full = environment["AWS_CONTAINER_CREDENTIALS_FULL_URI"], !full.isEmpty {
            sources.append(Self.container(url: full, environment))
        } else if let relative = environment["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"], !relative.isEmpty {
            sources.append(Self.container(url: "http://169.254.170.2\(relative)", environment))
        }
        if environment["AWS_EC2_METADATA_DISABLED"]?.lowercased() != "true" {
            var endpoint = environment["AWS_EC2_METADATA_SERVICE_ENDPOINT"] ?? "http://169.254.169.254"
            while endpoint.hasSuffix("/") { endpoint.removeLast() }
            sources.append(.instanceMetadata(endpoint: endpoint))
        }
        let sender = HTTPSender(
            policy: AddressPolicy(allowPrivate: true),
            timeout: .seconds(3),
            connectTimeout: .seconds(1)
        )
        self.init(sources: sources, sender: sender, now: now)
    }

    private static func container(url: String, _ environment: [String: String]) -> Source {
        .container(
            url: url,
            token: environment["AWS_CONTAINER_AUTHORIZATION_TOKEN"],
            tokenFile: environment["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"]
        )
    }

    /// Credentials to sign with now: the first source that has them. Blocking (a metadata
    /// endpoint may be asked): call it from a thread of its own.
    public func credentials() throws(S3Error) -> AWSCredentials {
        if let current = cached.withLock({ $0 }), !needsRefresh(current) { return current }
        var failures: [String] = []
        for source in sources {
            switch source {
            case .fixed(let credentials, _):
                return credentials
            case .container, .instanceMetadata:
                do throws(S3Error) {
                    let fetched = try fetch(source)
                    // An endpoint that serves credentials already expired (a stale cache of
                    // its own) has not given any: keep what is still valid, or fail.
                    if let expiry = fetched.expiration, expiry <= now() {
                        throw S3Error(
                            .credentials,
                            "\(Self.name(of: source)) gave credentials that expired at \(ISO8601DateFormatter().string(from: expiry))"
                        )
                    }
                    cached.withLock { $0 = fetched }
                    return fetched
                } catch {
                    // Still valid credentials outlive a failed refresh.
                    if let current = cached.withLock({ $0 }), let expiry = current.expiration, expiry > now() {
                        return current
                    }
                    failures.append(error.message)
                }
            }
        }
        throw S3Error(
            .credentials,
            "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in the shared credentials file (AWS_PROFILE), or run where a container or instance metadata endpoint gives them"
                + (failures.isEmpty ? "" : " (\(failures.joined(separator: "; ")))")
        )
    }

    private static func name(of source: Source) -> String {
        switch source {
        case .fixed(_, let from): from
        case .container: "the container credentials endpoint"
        case .instanceMetadata: "the instance metadata service"
        }
    }

    private func needsRefresh(_ credentials: AWSCredentials) -> Bool {
        guard let expiry = credentials.expiration else { return false }
        return now() >= expiry.addingTimeInterval(-Self.refreshMargin)
    }

    private func fetch(_ source: Source) throws(S3Error) -> AWSCredentials {
        switch source {
        case .fixed(let credentials, _):
            return credentials
        case .container(let url, let token, let tokenFile):
            var headers: [(name: String, value: String)] = []
            if let tokenFile, let data = FileManager.default.contents(atPath: tokenFile) {
                headers.append(
                    (
                        "Authorization",
                        String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                    )
                )
            } else if let token, !token.isEmpty {
                headers.append(("Authorization", token))
            }
            let body = try get(url, headers: headers, what: "the container credentials endpoint")
            return try Self.decode(body, from: "the container credentials endpoint", now: now())
        case .instanceMetadata(let endpoint):
            let what = "the instance metadata service"
            let tokenResponse = sender.send(
                HTTPRequest(
                    url: "\(endpoint)/latest/api/token",
                    method: .send(method: "PUT", body: Data()),
                    headers: [("X-aws-ec2-metadata-token-ttl-seconds", "21600")]
                )
            )
            guard tokenResponse.succeeded else {
                throw S3Error(.credentials, "\(what) gave no session token (\(Self.failure(tokenResponse)))")
            }
            let header = [(name: "X-aws-ec2-metadata-token", value: tokenResponse.body)]
            let roles = try get("\(endpoint)/latest/meta-data/iam/security-credentials/", headers: header, what: what)
            guard let role = roles.split(whereSeparator: \.isNewline).first.map(String.init), !role.isEmpty else {
                throw S3Error(.credentials, "\(what) names no IAM role for this instance")
            }
            let body = try get(
                "\(endpoint)/latest/meta-data/iam/security-credentials/\(SigV4.encode(role))",
                headers: header,
                what: what
            )
            return try Self.decode(body, from: what, now: now())
        }
    }

    private func get(_ url: String, headers: [(name: String, value: String)], what: String) throws(S3Error) -> String {
        let response = sender.send(HTTPRequest(url: url, method: .get(range: nil), headers: headers))
        guard response.succeeded else { throw S3Error(.credentials, "\(what) failed (\(Self.failure(response)))") }
        return response.body
    }

    private static func failure(_ response: HTTPResponse) -> String {
        response.statusCode.map { "HTTP \($0)" } ?? response.failure?.message ?? "no response"
    }

    /// How long credentials from an endpoint whose `Expiration` cannot be read are used.
    static let assumedLifetime: TimeInterval = 15 * 60

    /// An `Expiration`: RFC 3339, with any number of fractional digits (or none).
    static func date(_ text: String) -> Date? {
        let whole = text.replacingOccurrences(of: #"\.[0-9]+"#, with: "", options: .regularExpression)
        return ISO8601DateFormatter().date(from: whole)
    }

    /// `{"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}`, as both endpoints answer.
    static func decode(_ body: String, from what: String, now: Date = Date()) throws(S3Error) -> AWSCredentials {
        struct Answer: Decodable {
            var AccessKeyId: String?
            var SecretAccessKey: String?
            var Token: String?
            var Expiration: String?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body.utf8)),
            let id = answer.AccessKeyId, let secret = answer.SecretAccessKey
        else {
            throw S3Error(.credentials, "\(what) answered without credentials")
        }
        // Temporary credentials always expire: when the time cannot be read (or is missing),
        // they are taken to last `assumedLifetime`, never for ever.
        let expiration = answer.Expiration.flatMap(Self.date) ?? now.addingTimeInterval(Self.assumedLifetime)
        return AWSCredentials(
            accessKeyID: id,
            secretAccessKey: secret,
            sessionToken: answer.Token,
            expiration: expiration
        )
    }
}
