import Foundation
import PostgresNIO
import Queue

// API keys (`jobctl keys`, `jobctl serve`): the `jobctl.api_keys` table.
extension PostgresJobStore: APIKeyStore {
    public func createAPIKey(_ key: APIKey, secretHash: String) async throws {
        try await withConnection { connection in
            try await connection.query(
                """
                INSERT INTO jobctl.api_keys (id, name, scope, secret_hash, created_at, max_priority)
                VALUES (\(key.id), \(key.name), \(key.scope.rawValue), \(secretHash), \(key.createdAt.milliseconds),
                    \(key.maxPriority))
                """,
                logger: self.logger
            )
        }
    }

    public func apiKey(id: String) async throws -> (key: APIKey, secretHash: String)? {
        try await withConnection { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: StoredColumns.apiKey), secret_hash FROM jobctl.api_keys WHERE id = \(id)",
                logger: self.logger
            )
            for try await row in rows {
                let stored = Stored(row.makeRandomAccess())
                return (try stored.apiKey(), try stored.required("secret_hash", stored.text, row: "an API key"))
            }
            return nil
        }
    }

    public func apiKeys() async throws -> [APIKey] {
        try await withConnection { connection in
            let rows = try await connection.query(
                "SELECT \(unescaped: StoredColumns.apiKey) FROM jobctl.api_keys ORDER BY created_at, id",
                logger: self.logger
            )
            var keys: [APIKey] = []
            for try await row in rows { keys.append(try Stored(row.makeRandomAccess()).apiKey()) }
            return keys
        }
    }

    public func revokeAPIKey(id: String, at date: Date) async throws -> Bool {
        try await withConnection { connection in
            let rows = try await connection.query(
                """
                UPDATE jobctl.api_keys SET revoked_at = \(date.milliseconds) WHERE id = \(id) AND revoked_at IS NULL
                RETURNING id
                """,
                logger: self.logger
            )
            for try await _ in rows { return true }
            return false
        }
    }
}
