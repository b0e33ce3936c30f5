import Foundation

/// Where media is: a path, or an `http(s)://` URL. The one place that decides which, and how a
/// location is shown: job JSON, webhook bodies, the delivery log, logs and error messages never
/// carry credentials, and never a URL's query or fragment (a pre-signed URL's query is its
/// signature, a webhook's often a token). The full location stays in the job table for the
/// worker and the dispatcher.
public enum MediaLocation {
    /// Whether `location` is an `http://` or `https://` URL (any case).
    public static func isRemote(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// How a location is shown: a URL without credentials, query or fragment; a path as it is.
    public static func displayed(_ location: String) -> String {
        guard isRemote(location) else { return location }
        guard var components = URLComponents(string: location) else { return bluntlyRedacted(location) }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? bluntlyRedacted(location)
    }

    /// A URL without its `user:password@` part (the query kept), for a database URL in messages.
    public static func withoutCredentials(_ url: String) -> String {
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
        let authorityEnd =
            text[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? text.endIndex
        if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@") {
            text = text[..<scheme.upperBound] + text[text.index(after: at)...]
        }
        return String(text)
    }
}
