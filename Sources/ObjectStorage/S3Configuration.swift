import Foundation

/// Where the object store is and how to reach it, by the AWS conventions users already have:
/// `AWS_REGION`/`AWS_DEFAULT_REGION` (else the profile's `region`, else `us-east-1`), and
/// `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL` (else the profile's `endpoint_url`) for a store
/// that is not AWS — R2, Ceph, MinIO, SeaweedFS — addressed path-style (`ENDPOINT/BUCKET/KEY`).
/// Without an endpoint, AWS itself, virtual-hosted (`https://BUCKET.s3.REGION.amazonaws.com/KEY`;
/// a bucket with dots path-style, as its name would not match the certificate).
public struct S3Configuration: Sendable, Hashable {
    public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
        public var scheme: String
        /// As the `Host` header carries it: with the port when it is not the scheme's default.
        public var host: String
        /// A path before the bucket (an endpoint behind a proxy at `/s3`), without a trailing `/`.
        public var basePath: String

        public init(scheme: String, host: String, basePath: String = "") {
            self.scheme = scheme
            self.host = host
            self.basePath = basePath
        }

        public var description: String { "\(scheme)://\(host)\(basePath)" }

        /// Parses an endpoint URL: http or https, a host, an optional port and path; no
        /// credentials, query or fragment.
        public static func parse(_ text: String) throws(S3Error) -> Endpoint {
            guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
            else {
                throw S3Error(.configuration, "the endpoint \(text) is not an http(s)://HOST[:PORT] URL")
            }
            guard components.user == nil, components.password == nil, components.query == nil,
                components.fragment == nil
            else {
                throw S3Error(.configuration, "the endpoint URL cannot hold credentials, a query or a fragment")
            }
            let standard = scheme == "http" ? 80 : 443
            let port = components.port.flatMap { $0 == standard ? nil : $0 }
            let shownHost = host.contains(":") ? "[\(host)]" : host
            var path = components.percentEncodedPath
            while path.hasSuffix("/") { path.removeLast() }
            return Endpoint(scheme: scheme, host: shownHost + (port.map { ":\($0)" } ?? ""), basePath: path)
        }
    }

    public var region: String
    /// `nil`: AWS itself.
    public var endpoint: Endpoint?

    public init(region: String, endpoint: Endpoint? = nil) {
        self.region = region
        self.endpoint = endpoint
    }

    /// From the environment and the shared files' profile.
    public static func resolve(
        environment: [String: String],
        files: SharedConfigFiles
    ) throws(S3Error)
        -> S3Configuration
    {
        func setting(_ names: [String], profileKey: String) -> String? {
            for name in names { if let value = environment[name], !value.isEmpty { return value } }
            return files.settings[profileKey].flatMap { $0.isEmpty ? nil : $0 }
        }
        let region = setting(["AWS_REGION", "AWS_DEFAULT_REGION"], profileKey: "region") ?? "us-east-1"
        guard region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }), !region.isEmpty else {
            throw S3Error(.configuration, "the region \(region) is not a region name")
        }
        let endpoint = try setting(["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"], profileKey: "endpoint_url").map {
            (text) throws(S3Error) in try Endpoint.parse(text)
        }
        return S3Configuration(region: region, endpoint: endpoint)
    }

    /// Where a request about `location` goes: the URL's scheme and host, and the raw path the
    /// signer encodes (`/BUCKET/KEY` path-style, `/KEY` virtual-hosted). `key` empty: the bucket.
    public func address(bucket: String, key: String) -> (scheme: String, host: String, path: String) {
        if let endpoint {
            return (endpoint.scheme, endpoint.host, "\(endpoint.basePath)/\(bucket)" + (key.isEmpty ? "" : "/\(key)"))
        }
        let regional = "s3.\(region).amazonaws.com"
        if bucket.contains(".") { return ("https", regional, "/\(bucket)" + (key.isEmpty ? "" : "/\(key)")) }
        return ("https", "\(bucket).\(regional)", "/\(key)")
    }
}
