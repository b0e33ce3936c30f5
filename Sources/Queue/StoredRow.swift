import Foundation
import JobctlCore

/// A row of the job database read **by column name**, whatever the database: SQLite's and
/// PostgreSQL's row types conform, and jobs and deliveries are built from them here, once.
/// Both stores have the same columns (migrations/), times in Unix milliseconds, JSON as text.
public protocol StoredRow {
    func text(_ column: String) throws -> String?
    func integer(_ column: String) throws -> Int64?
    func real(_ column: String) throws -> Double?
    func boolean(_ column: String) throws -> Bool?
}

/// The columns jobs and deliveries are read from, the same in every store.
public enum StoredColumns {
    /// The `jobs` columns a `Job` is built from (`SELECT \(StoredColumns.job) FROM jobs`).
    public static let job = [
        "id", "kind", "status", "input", "output", "preset", "preset_settings", "format", "range_start",
        "range_duration", "priority",
        "attempt", "max_attempts", "progress", "result", "error_code", "error_message", "error_retryable", "webhook",
        "metadata",
        "idempotency_key", "worker", "cancel_requested", "run_at", "created_at", "started_at", "finished_at",
        "owner", "parent_id", "child_index", "role", "children_total", "children_completed", "children_failed",
        "children_cancelled",
    ].joined(separator: ", ")

    /// The `api_keys` columns an `APIKey` is built from (never the secret's hash).
    public static let apiKey = "id, name, scope, created_at, revoked_at, max_priority"

    /// The `webhook_deliveries` columns a `WebhookDelivery` is built from.
    public static let delivery =
        "id, job_id, type, url, status, attempts, next_attempt_at, created_at, delivered_at, last_status_code, last_error"
}

extension StoredRow {
    /// A column that may not be NULL; a NULL there is a damaged row.
    @inlinable
    public func required<Value>(
        _ column: String,
        _ read: (String) throws -> Value?,
        row: @autoclosure () -> String
    ) throws -> Value {
        guard let value = try read(column) else {
            throw JobStoreError(
                .databaseCorrupt,
                "\(row()) has no \(column), which every row must have (the row is damaged)"
            )
        }
        return value
    }

    /// A job from a row of `StoredColumns.job`, with its tracks (read separately). Inlinable:
    /// each store's row type gets its own specialized copy, with direct calls to its cell
    /// readers (a claim decodes many rows; generic, this showed in a busy worker's profile).
    @inlinable
    public func job(tracks: [JobTrack]) throws -> Job {
        let id = try required("id", text, row: "a job")
        // The row's name for an error, built only when there is one (a claim decodes many rows).
        func name() -> String { "job \(id)" }
        let errorCode = try text("error_code")
        return Job(
            id: JobID(id),
            kind: try StoredValue.decode(try required("kind", text, row: name()), column: "kind", row: name()),
            status: try StoredValue.decode(try required("status", text, row: name()), column: "status", row: name()),
            input: try required("input", text, row: name()),
            output: try required("output", text, row: name()),
            preset: try required("preset", text, row: name()),
            presetSettings: try StoredJSON.decode(JSONValue.self, text("preset_settings")) ?? .null,
            format: try text("format"),
            range: try real("range_start").map { Job.Range(start: $0, duration: try real("range_duration")) },
            priority: Int(try required("priority", integer, row: name())),
            attempt: Int(try required("attempt", integer, row: name())),
            maxAttempts: Int(try required("max_attempts", integer, row: name())),
            progress: try required("progress", real, row: name()),
            tracks: tracks,
            result: try StoredJSON.decode(JSONValue.self, text("result")),
            error: try errorCode.map {
                JobError(
                    code: ErrorCode(rawValue: $0),
                    message: try text("error_message") ?? "",
                    retryable: try boolean("error_retryable")
                )
            },
            webhook: try text("webhook"),
            metadata: try StoredJSON.decode([String: String].self, text("metadata")) ?? [:],
            idempotencyKey: try text("idempotency_key"),
            worker: try text("worker"),
            cancelRequested: try required("cancel_requested", boolean, row: name()),
            runAt: Date(milliseconds: try required("run_at", integer, row: name())),
            createdAt: Date(milliseconds: try required("created_at", integer, row: name())),
            startedAt: try integer("started_at").map(Date.init(milliseconds:)),
            finishedAt: try integer("finished_at").map(Date.init(milliseconds:)),
            owner: try text("owner"),
            parent: try text("parent_id").map { JobID($0) },
            childIndex: try integer("child_index").map { Int($0) },
            children: try children(),
            role: try JobRole(stored: try text("role"), row: name())
        )
    }

    /// A parent's tally (`nil` for a job that has not fanned out).
    @inlinable
    public func children() throws -> JobGraphStateMachine.Children? {
        guard let total = try integer("children_total"), total > 0 else { return nil }
        return JobGraphStateMachine.Children(
            total: Int(total),
            completed: Int(try integer("children_completed") ?? 0),
            failed: Int(try integer("children_failed") ?? 0),
            cancelled: Int(try integer("children_cancelled") ?? 0)
        )
    }

    /// An API key from a row of `StoredColumns.apiKey`.
    public func apiKey() throws -> APIKey {
        let id = try required("id", text, row: "an API key")
        let name = "API key \(id)"
        return APIKey(
            id: id,
            name: try required("name", text, row: name),
            scope: try StoredValue.decode(try required("scope", text, row: name), column: "scope", row: name),
            createdAt: Date(milliseconds: try required("created_at", integer, row: name)),
            revokedAt: try integer("revoked_at").map(Date.init(milliseconds:)),
            maxPriority: Int(try integer("max_priority") ?? 0)
        )
    }

    /// A delivery from a row of `StoredColumns.delivery`, with its attempts (read separately).
    public func delivery(log: [DeliveryAttempt]) throws -> WebhookDelivery {
        let id = try required("id", text, row: "a webhook delivery")
        let name = "webhook delivery \(id)"
        return WebhookDelivery(
            id: id,
            jobID: JobID(try required("job_id", text, row: name)),
            type: try required("type", text, row: name),
            url: try required("url", text, row: name),
            status: try StoredValue.decode(try required("status", text, row: name), column: "status", row: name),
            attempts: Int(try required("attempts", integer, row: name)),
            nextAttemptAt: try integer("next_attempt_at").map(Date.init(milliseconds:)),
            createdAt: Date(milliseconds: try required("created_at", integer, row: name)),
            deliveredAt: try integer("delivered_at").map(Date.init(milliseconds:)),
            lastStatusCode: try integer("last_status_code").map { Int($0) },
            lastError: try text("last_error"),
            log: log
        )
    }
}

/// JSON as the stores keep it in text columns: sorted keys, slashes unescaped.
public enum StoredJSON {
    public static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    // The common empty values without an encoder (a busy worker completes many jobs whose
    // result is `{}` and that have no tracks).

    public static func encode(_ value: JSONValue) throws -> String {
        switch value {
        case .null: "null"
        case .object(let members) where members.isEmpty: "{}"
        case .array(let elements) where elements.isEmpty: "[]"
        default: try encode(Encoded(value))
        }
    }

    public static func encode(_ tracks: [JobTrack]) throws -> String {
        tracks.isEmpty ? "[]" : try encode(Encoded(tracks))
    }

    public static func encode(_ metadata: [String: String]) throws -> String {
        metadata.isEmpty ? "{}" : try encode(Encoded(metadata))
    }

    /// Routes a value to the generic encoder (not back to the overloads above).
    private struct Encoded<Value: Encodable>: Encodable {
        let value: Value
        init(_ value: Value) { self.value = value }
        func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
    }

    /// `nil` for SQL NULL and JSON `null`.
    public static func decode<T: Decodable>(_ type: T.Type, _ text: String?) throws -> T? {
        guard let text, text != "null" else { return nil }
        // The common empty cases without a decoder (a claim decodes many rows).
        if text == "{}" {
            if T.self == [String: String].self { return [String: String]() as? T }
            if T.self == JSONValue.self { return JSONValue.object([:]) as? T }
        }
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    }
}
