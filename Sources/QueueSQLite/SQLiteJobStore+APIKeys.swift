import Foundation
import GRDB
import Queue

// API keys (`jobctl keys`, `jobctl serve`): the `api_keys` table.
extension SQLiteJobStore: APIKeyStore {
    public func createAPIKey(_ key: APIKey, secretHash: String) async throws {
        try await write { db in
            try db.execute(
                sql:
                    "INSERT INTO api_keys (id, name, scope, secret_hash, created_at, max_priority) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [
                    key.id, key.name, key.scope.rawValue, secretHash, key.createdAt.milliseconds, key.maxPriority,
                ]
            )
        }
    }

    public func apiKey(id: String) async throws -> (key: APIKey, secretHash: String)? {
        try await read { db in
            guard
                let row = try Row.fetchOne(
                    db.cachedStatement(sql: "SELECT \(StoredColumns.apiKey), secret_hash FROM api_keys WHERE id = ?"),
                    arguments: [id]
                )
            else { return nil }
            let stored = Stored(row)
            return (try stored.apiKey(), try stored.required("secret_hash", stored.text, row: "an API key"))
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT \(StoredColumns.apiKey) FROM api_keys ORDER BY created_at, id")
                .map { try Stored($0).apiKey() }
        }
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                arguments: [date.milliseconds, id]
            )
            return db.changesCount == 1
        }
    }
}
