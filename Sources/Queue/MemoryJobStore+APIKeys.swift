import Foundation
import Synchronization

extension MemoryJobStore: APIKeyStore {
    public func createAPIKey(_ key: APIKey, secretHash: String) async throws {
        try apiKeyTable.withLock { keys in
            guard keys[key.id] == nil else {
                throw JobStoreError(.databaseUnavailable, "an API key with the id \(key.id) exists already")
            }
            keys[key.id] = (key, secretHash)
        }
    }

    public func apiKey(id: String) async throws -> (key: APIKey, secretHash: String)? {
        apiKeyTable.withLock { $0[id] }
    }

    public func apiKeys() async throws -> [APIKey] {
        apiKeyTable.withLock { $0.values.map(\.key).sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        apiKeyTable.withLock { keys in
            guard var entry = keys[id], entry.key.revokedAt == nil else { return false }
            entry.key.revokedAt = date
            keys[id] = entry
            return true
        }
    }
}
