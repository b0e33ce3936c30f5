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

    public init(
        kind: JobKind = .export, input: String, output: String, preset: String, presetSettings: JSONValue = .null,
        format: String? = nil, range: Job.Range? = nil, priority: Int = 0, maxAttempts: Int = 3,
        idempotencyKey: String? = nil, metadata: [String: String] = [:], webhook: String? = nil
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
    }

    /// How an input, output or webhook URL is shown (job JSON, webhook bodies, the delivery
    /// log, logs, error messages): an `http(s)` URL without credentials, query or fragment (a
    /// pre-signed URL's query is its signature, a webhook's often a token); a path as it is.
    /// The full URL stays in the job table for the worker and the dispatcher.
    public static func displayURL(_ location: String) -> String {
        let lower = location.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return location }
        guard var components = URLComponents(string: location) else { return bluntlyRedacted(location) }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? bluntlyRedacted(location)
    }

    /// A URL without its `user:password@` part, for display and logs.
    public static func redactingCredentials(_ url: String) -> String {
        guard let components = URLComponents(string: url) else { return bluntlyRedacted(url, keepingQuery: true) }
        guard components.user != nil || components.password != nil else { return url }
        var redacted = components
        redacted.user = nil
        redacted.password = nil
        return redacted.string ?? bluntlyRedacted(url, keepingQuery: true)
    }

    /// For what `URLComponents` cannot parse: fails closed, by the characters — everything from
    /// the first `?` or `#` is cut (unless `keepingQuery`), and so is a `userinfo@` before the host.
    static func bluntlyRedacted(_ url: String, keepingQuery: Bool = false) -> String {
        var text = Substring(url)
        if !keepingQuery, let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = text[..<cut] }
        guard let scheme = text.range(of: "://") else { return String(text) }
        let authorityEnd = text[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
            text = text[..<scheme.upperBound] + text[text.index(after: at)...]
        }
        return String(text)
    }
}
