/// The vocabulary of error codes: what a job's `error.code`, the CLI's `error: CODE: …` line and
/// the API's `{"error": {"code"}}` say (docs/spec.md §4, docs/cli.md, docs/api.md). One type
/// for all three, and the code of every error that has one (`MediaError`, `JobStoreError`,
/// `JobError`), each code with what follows from it: whether another attempt could succeed,
/// the HTTP status the API answers with, the exit code of the CLI (docs/spec.md §4's table,
/// which a test holds this one to). Stored and sent as its string; the wire formats are the
/// strings.
///
/// A struct with static members rather than an enum: codes can be added without breaking
/// anyone's `switch`, and a stored string this version does not know still reads (it keeps
/// its text, and is final). Only such a reading makes a code from a string.
public struct ErrorCode: Hashable, Sendable, Codable, CustomStringConvertible, Comparable {
    public let rawValue: String

    /// A code read from storage or another version: kept as it is.
    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    public static func < (lhs: ErrorCode, rhs: ErrorCode) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// What a code implies, beyond its name.
    public struct Traits: Sendable, Hashable {
        /// Whether another attempt of a job failing with it could succeed (docs/spec.md §4).
        public var retryable: Bool
        /// The API's status for it. A refused field answers as `invalid_request` does, whatever
        /// its code (`APIError.invalid`), and a body that is not JSON or too large has its own
        /// (docs/api.md).
        public var httpStatus: Int
        /// The CLI's exit status for it. A refused argument exits as `usage` does, whatever its
        /// code (`CommandFailure.refused`).
        public var exitCode: Int32
    }

    /// Every code, with its traits.
    public static let vocabulary: [ErrorCode: Traits] = {
        func final(_ status: Int, exit: Int32 = 1) -> Traits {
            Traits(retryable: false, httpStatus: status, exitCode: exit)
        }
        func retried(_ status: Int) -> Traits { Traits(retryable: true, httpStatus: status, exitCode: 1) }
        return [
            // A job's errors.
            .inputNotFound: final(422),
            .inputUnreadable: final(422),
            .inputUnsupported: final(422),
            .rangeOutOfBounds: final(422),
            .presetUnknown: final(422, exit: 64),
            .presetIncompatible: final(422),
            .outputUnwritable: retried(500),
            .outputForbidden: final(422),
            .decodeFailed: final(422),
            .encodeFailed: final(422),
            .limitExceeded: final(422),
            .invalidRequest: final(422, exit: 64),
            .leaseLost: retried(500),
            .workerCrashed: final(500),
            .webhookForbidden: final(422, exit: 64),
            .databaseCorrupt: final(500),
            .internalError: retried(500),
            .cancelled: final(409, exit: 130),
            // The commands' and the API's own.
            .usage: final(400, exit: 64),
            .notFound: final(404),
            .conflict: final(409),
            .databaseUnavailable: final(503),
            .keyNotFound: final(404),
            .tlsInvalid: final(500, exit: 64),
            .listenFailed: final(500),
            .unauthorized: final(401),
            .forbidden: final(403),
            .jobNotFound: final(404),
            .deliveryNotFound: final(404),
            .methodNotAllowed: final(405),
            .requestTimeout: final(408),
            .jobEnded: final(409),
            .jobNotRetryable: final(409),
            .deliveryInFlight: final(409),
            .idempotencyKeyReused: final(422),
            .rateLimited: final(429),
            .tooManyWatches: final(429),
        ]
    }()

    /// This code's traits; a code this version does not know is final, 500, exit 1.
    public var traits: Traits {
        Self.vocabulary[self] ?? Traits(retryable: false, httpStatus: 500, exitCode: 1)
    }

    public var isRetryable: Bool { traits.retryable }
    public var httpStatus: Int { traits.httpStatus }
    public var exitCode: Int32 { traits.exitCode }

    // A job's errors (docs/spec.md §4).
    public static let inputNotFound = ErrorCode(rawValue: "input_not_found")
    public static let inputUnreadable = ErrorCode(rawValue: "input_unreadable")
    public static let inputUnsupported = ErrorCode(rawValue: "input_unsupported")
    public static let rangeOutOfBounds = ErrorCode(rawValue: "range_out_of_bounds")
    public static let presetUnknown = ErrorCode(rawValue: "preset_unknown")
    public static let presetIncompatible = ErrorCode(rawValue: "preset_incompatible")
    public static let outputUnwritable = ErrorCode(rawValue: "output_unwritable")
    public static let outputForbidden = ErrorCode(rawValue: "output_forbidden")
    public static let decodeFailed = ErrorCode(rawValue: "decode_failed")
    public static let encodeFailed = ErrorCode(rawValue: "encode_failed")
    /// A resource limit (`ResourceLimits`): picture size, duration, tracks, output size.
    public static let limitExceeded = ErrorCode(rawValue: "limit_exceeded")
    /// A request out of its domain; for a job kind's option, `MediaError.option` names it.
    public static let invalidRequest = ErrorCode(rawValue: "invalid_request")
    public static let leaseLost = ErrorCode(rawValue: "lease_lost")
    public static let workerCrashed = ErrorCode(rawValue: "worker_crashed")
    public static let webhookForbidden = ErrorCode(rawValue: "webhook_forbidden")
    /// The database, or a row of it, is damaged (SQLite: a malformed page, not a database at
    /// all; a job's stored options that do not read). Retrying cannot help: stop, keep a copy,
    /// recover (docs/operations.md).
    public static let databaseCorrupt = ErrorCode(rawValue: "database_corrupt")
    public static let internalError = ErrorCode(rawValue: "internal")
    /// Not a job's error code: the work was cancelled (status `cancelled`; the CLI exits 130).
    public static let cancelled = ErrorCode(rawValue: "cancelled")

    // The commands' own (docs/cli.md).
    /// A usage or configuration error: a bad flag, a malformed `--db` location (not a
    /// `postgres://` URL, an unknown `sslmode`): not an outage.
    public static let usage = ErrorCode(rawValue: "usage")
    public static let notFound = ErrorCode(rawValue: "not_found")
    /// The job's status does not allow the operation (`cancel` of an ended job…);
    /// `JobStoreError.status` says which.
    public static let conflict = ErrorCode(rawValue: "conflict")
    /// The database cannot be opened, reached or used.
    public static let databaseUnavailable = ErrorCode(rawValue: "database_unavailable")
    public static let keyNotFound = ErrorCode(rawValue: "key_not_found")
    public static let tlsInvalid = ErrorCode(rawValue: "tls_invalid")
    public static let listenFailed = ErrorCode(rawValue: "listen_failed")

    // The API's own (docs/api.md).
    public static let unauthorized = ErrorCode(rawValue: "unauthorized")
    public static let forbidden = ErrorCode(rawValue: "forbidden")
    public static let jobNotFound = ErrorCode(rawValue: "job_not_found")
    public static let deliveryNotFound = ErrorCode(rawValue: "delivery_not_found")
    public static let methodNotAllowed = ErrorCode(rawValue: "method_not_allowed")
    public static let requestTimeout = ErrorCode(rawValue: "request_timeout")
    public static let jobEnded = ErrorCode(rawValue: "job_ended")
    public static let jobNotRetryable = ErrorCode(rawValue: "job_not_retryable")
    public static let deliveryInFlight = ErrorCode(rawValue: "delivery_in_flight")
    public static let idempotencyKeyReused = ErrorCode(rawValue: "idempotency_key_reused")
    public static let rateLimited = ErrorCode(rawValue: "rate_limited")
    public static let tooManyWatches = ErrorCode(rawValue: "too_many_watches")
}
