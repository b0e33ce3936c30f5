import Foundation

/// Where media is: a path, an `http(s)://` URL, or an object in a bucket (`s3://BUCKET/KEY`).
/// The one place that decides which, and how a location is shown: job JSON, webhook bodies, the
/// delivery log, logs and error messages never carry credentials, and never a URL's query or
/// fragment (a pre-signed URL's query is its signature, a webhook's often a token). The full
/// location stays in the job table for the worker and the dispatcher.
public enum MediaLocation {
    /// Whether `location` is not a local path: an `http://`, `https://` or `s3://` URL (any case).
    public static func isRemote(_ location: String) -> Bool {
        isHTTP(location) || isObjectStore(location)
    }

    /// Whether `location` is an `http://` or `https://` URL (any case).
    public static func isHTTP(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// Whether `location` names an object store location, `s3://BUCKET/KEY` (any case of the
    /// scheme). It holds no secret: credentials come from the worker's environment.
    public static func isObjectStore(_ location: String) -> Bool {
        location.lowercased().hasPrefix("s3://")
    }

    /// How a location is shown: a URL without credentials, query or fragment; a path, or an
    /// `s3://` location, as it is.
    public static func displayed(_ location: String) -> String {
        guard isHTTP(location) else { return location }
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
