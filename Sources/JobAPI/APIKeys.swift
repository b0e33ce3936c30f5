import Crypto
import Foundation
import JobctlCore
import Queue
import Synchronization

/// Making and checking API keys. A key is `jck_ID_SECRET`: ID (12 hex digits) names the row,
/// SECRET (43 characters of base64url, 256 random bits) is known only to its holder; the
/// store keeps SHA-256(SECRET) in hex. A slow password hash buys nothing for 256 random bits.
public enum APIKeys {
    /// A new key: the row to store, its hash, and the text to print once.
    public static func make(
        name: String,
        scope: APIScope,
        maxPriority: Int = 0,
        at date: Date = Date()
    ) -> (
        key: APIKey, secretHash: String, text: String
    ) {
        let id = SecretText.hex(SecretText.randomBytes(6))
        let secret = SecretText.base64URL(Data(SecretText.randomBytes(32)))
        let key = APIKey(
            id: id,
            name: name,
            scope: scope,
            createdAt: Date(milliseconds: date.milliseconds),
            maxPriority: maxPriority
        )
        return (key, hash(secret), "jck_\(id)_\(secret)")
    }

    /// `jck_ID_SECRET` → (ID, SECRET), or nil when the text is not shaped like a key.
    public static func parse(_ text: Substring) -> (id: String, secret: String)? {
        let parts = text.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "jck", parts[1].count == 12, parts[1].allSatisfy(\.isHexDigit),
            (20...100).contains(parts[2].count)
        else { return nil }
        return (String(parts[1]), String(parts[2]))
    }

    public static func hash(_ secret: String) -> String { SecretText.hex(SHA256.hash(data: Data(secret.utf8))) }

    /// The key `text` stands for, if it exists, is not revoked, and its secret matches. With a
    /// `cache`, a row read within its lifetime is used again (the secret is still hashed and
    /// compared on every request).
    public static func verify(
        _ text: Substring,
        in store: any APIKeyStore,
        cache: APIKeyCache? = nil
    ) async throws -> APIKey? {
        guard let (id, secret) = parse(text) else { return nil }
        let row: (key: APIKey, secretHash: String)?
        if let cached = cache?.row(id) {
            row = cached
        } else {
            row = try await store.apiKey(id: id)
            if let row { cache?.keep(row, for: id) }
        }
        guard let (key, stored) = row else { return nil }
        guard SecretText.constantTimeEqual(hash(secret), stored), key.revokedAt == nil else { return nil }
        return key
    }
}

/// Key rows read recently, so that a busy client does not cost a database read per request
/// for its key: a revocation takes effect within `lifetime` on every server. Unknown ids are
/// not kept (a guesser's ids would fill it; the bad-key limit per address covers them).
public final class APIKeyCache: Sendable {
    private struct Entry {
        let row: (key: APIKey, secretHash: String)
        let at: ContinuousClock.Instant
    }

    /// Rows kept before the whole cache is dropped.
    static let capacity = 10_000

    let lifetime: Duration
    private let entries = Mutex<[String: Entry]>([:])

    public init(lifetime: Duration) { self.lifetime = lifetime }

    func row(_ id: String) -> (key: APIKey, secretHash: String)? {
        entries.withLock { entries in
            guard let entry = entries[id], ContinuousClock.now - entry.at < lifetime else { return nil }
            return entry.row
        }
    }

    func keep(_ row: (key: APIKey, secretHash: String), for id: String) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll() }
            entries[id] = Entry(row: row, at: .now)
        }
    }
}
