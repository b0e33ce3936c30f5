import Crypto
import Foundation

/// A Standard Webhooks secret: `whsec_` + the base64 of the key bytes (docs/spec.md §6). Never stored
/// in the database, never logged.
public struct WebhookSecret: Sendable, Hashable, CustomStringConvertible {
    /// The key bytes (`SymmetricKey` is not `Sendable`; it is made when signing).
    private let bytes: Data

    var key: SymmetricKey { SymmetricKey(data: bytes) }

    public init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(trimmed.dropFirst(6))),
            bytes.count >= 16
        else {
            return nil
        }
        self.bytes = bytes
    }

    /// A new secret: 32 random bytes.
    public static func generate() -> String {
        "whsec_" + SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    public var description: String { "whsec_…" }

    /// The secrets in effect: `JOBCTL_WEBHOOK_SECRET` (one, or several separated by spaces or
    /// commas, for rotation), else the file `JOBCTL_WEBHOOK_SECRET_FILE` names.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> [WebhookSecret] {
        var text = environment["JOBCTL_WEBHOOK_SECRET"] ?? ""
        if text.isEmpty, let path = environment["JOBCTL_WEBHOOK_SECRET_FILE"], !path.isEmpty {
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw WebhookSecretError(reason: "JOBCTL_WEBHOOK_SECRET_FILE \(path) cannot be read")
            }
        }
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," || $0.isNewline }).map(String.init)
        return try parts.map { part in
            guard let secret = WebhookSecret(part) else {
                throw WebhookSecretError(
                    reason:
                        "a webhook secret is whsec_ followed by at least 16 base64-encoded bytes (make one with `jobctl webhooks secret`)"
                )
            }
            return secret
        }
    }
}

public struct WebhookSecretError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}

/// Signs webhook bodies per the Standard Webhooks spec: `v1,` + base64(HMAC-SHA256(key,
/// "{id}.{timestamp}.{body}")), one signature per secret, separated by spaces.
public enum WebhookSignature {
    public static func sign(id: String, timestamp: Int64, body: Data, secrets: [WebhookSecret]) -> String {
        var message = Data("\(id).\(timestamp).".utf8)
        message.append(body)
        return secrets.map { secret in
            "v1," + Data(HMAC<SHA256>.authenticationCode(for: message, using: secret.key)).base64EncodedString()
        }.joined(separator: " ")
    }

    /// Whether `header` carries a valid signature of the message under any of `secrets`.
    public static func verify(
        id: String,
        timestamp: Int64,
        body: Data,
        header: String,
        secrets: [WebhookSecret]
    ) -> Bool {
        var message = Data("\(id).\(timestamp).".utf8)
        message.append(body)
        let presented = header.split(separator: " ").compactMap { part -> Data? in
            guard part.hasPrefix("v1,") else { return nil }
            return Data(base64Encoded: String(part.dropFirst(3)))
        }
        return secrets.contains { secret in
            presented.contains {
                HMAC<SHA256>.isValidAuthenticationCode($0, authenticating: message, using: secret.key)
            }
        }
    }
}
