import Foundation

/// What an API key may do (`jobctl serve`). `read` sees its own jobs; `submit` also submits,
/// cancels and retries them; `admin` sees and acts on every job, the CLI's included.
public enum APIScope: String, Sendable, Hashable, Codable, CaseIterable, Comparable {
    case read
    case submit
    case admin

    private var rank: Int {
        switch self {
        case .read: 0
        case .submit: 1
        case .admin: 2
        }
    }

    public static func < (a: APIScope, b: APIScope) -> Bool { a.rank < b.rank }
}

/// An API key as stored: never its secret, only the secret's hash (kept apart, see
/// `APIKeyStore`). The key a client sends is `jck_ID_SECRET`.
public struct APIKey: Sendable, Hashable, Codable {
    /// The public part of the key, and the owner recorded on the jobs it submits.
    public var id: String
    public var name: String
    public var scope: APIScope
    public var createdAt: Date
    public var revokedAt: Date?
    /// The highest priority its jobs may have (default 0, the default priority): running ahead
    /// of others is the operator's to grant. Admin keys may use any.
    public var maxPriority: Int

    public init(
        id: String,
        name: String,
        scope: APIScope,
        createdAt: Date,
        revokedAt: Date? = nil,
        maxPriority: Int = 0
    ) {
        self.id = id
        self.name = name
        self.scope = scope
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.maxPriority = maxPriority
    }

    /// Whether its jobs may run at `priority`.
    public func allows(priority: Int) -> Bool { scope == .admin || priority <= maxPriority }
}

/// Where API keys live: the job database (table `api_keys`), so that every `jobctl serve`
/// process in front of one queue knows the same keys.
public protocol APIKeyStore: Sendable {
    /// Stores a new key. The id must be new.
    func createAPIKey(_ key: APIKey, secretHash: String) async throws
    /// The key with this id, revoked or not, and its secret's hash.
    func apiKey(id: String) async throws -> (key: APIKey, secretHash: String)?
    /// Every key, oldest first.
    func apiKeys() async throws -> [APIKey]
    /// Revokes a key; `false` when there is no such key or it was revoked already.
    func revokeAPIKey(id: String, at date: Date) async throws -> Bool
}

/// Which jobs a listing returns, newest first (`created_at`, then `id`, descending).
public struct JobQuery: Sendable, Hashable {
    public var status: JobStatus?
    /// Only the jobs this API key submitted; `nil`: everybody's.
    public var owner: String?
    /// Only jobs strictly after this one in the order (the last job of the previous page).
    public var after: Cursor?
    /// Only these jobs (the API's long polls and event streams read all they watch at once);
    /// `nil`: any job.
    public var ids: [JobID]?
    /// Only this job's children (a job graph's, issue 27); `nil`: any job.
    public var parent: JobID?
    /// Only jobs submitted by themselves, not a graph's children (what listings show unless
    /// asked for a parent's children).
    public var topLevelOnly = false
    /// Every one of these holds too (the dashboard's filters); none: no more conditions.
    public var conditions: [JobCondition] = []
    public var limit: Int

    /// A position in the listing order: a job's creation time and id.
    public struct Cursor: Sendable, Hashable {
        public var createdAt: Int64
        public var id: JobID

        public init(createdAt: Int64, id: JobID) {
            self.createdAt = createdAt
            self.id = id
        }
    }

    public init(
        status: JobStatus? = nil,
        owner: String? = nil,
        after: Cursor? = nil,
        ids: [JobID]? = nil,
        parent: JobID? = nil,
        limit: Int
    ) {
        self.status = status
        self.owner = owner
        self.after = after
        self.ids = ids
        self.parent = parent
        self.limit = limit
    }
}
