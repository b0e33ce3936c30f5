import Foundation

/// What `submit` asks for. Validated by the command before it reaches a store.
public struct JobRequest: Sendable, Hashable {
    public var kind: JobKind
    public var input: String
    public var output: String
    public var preset: String
    public var presetSettings: JSONValue
    public var format: String?
    public var range: Job.Range?
    public var priority: Int
    public var maxAttempts: Int
    public var idempotencyKey: String?
    public var metadata: [String: String]
    public var webhook: String?
    /// The API key submitting it (`jobctl serve`); `nil` for the CLI.
    public var owner: String?
    /// Set by a fan-out (`JobStore.fanOut`) on the children it creates; a submission has none.
    public var parent: JobID?
    public var childIndex: Int?
    /// Its place in a graph: a submission is standalone or a parent; a fan-out's children are
    /// children (`JobRole.child`).
    public var role: JobRole

    public init(
        kind: JobKind = .export,
        input: String,
        output: String,
        preset: String,
        presetSettings: JSONValue = .null,
        format: String? = nil,
        range: Job.Range? = nil,
        priority: Int = 0,
        maxAttempts: Int = 3,
        idempotencyKey: String? = nil,
        metadata: [String: String] = [:],
        webhook: String? = nil,
        owner: String? = nil,
        role: JobRole = .standalone
    ) {
        self.kind = kind
        self.input = input
        self.output = output
        self.preset = preset
        self.presetSettings = presetSettings
        self.format = format
        self.range = range
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.idempotencyKey = idempotencyKey
        self.metadata = metadata
        self.webhook = webhook
        self.owner = owner
        self.parent = nil
        self.childIndex = nil
        self.role = role
    }
}

extension JobRequest {
    /// The row a fan-out writes for child `index` of `parent`: the parent's owner, no webhook
    /// and no idempotency key (children are silent and never submitted on their own), and a
    /// child's role, with the part its kind gave it (every store writes children through here).
    public func child(of parent: JobID, index: Int, owner: String?) -> JobRequest {
        var child = self
        (child.parent, child.childIndex, child.owner) = (parent, index, owner)
        (child.webhook, child.idempotencyKey) = (nil, nil)
        child.role = .child(part: role.part)
        return child
    }
}
