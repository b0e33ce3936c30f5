/// An http(s) URL read the way jobctl reads every URL a user gives it (input, output, webhook),
/// before any guard looks at its host: the parts of RFC 3986 and what makes one malformed.
/// Stricter than Foundation's `URL(string:)`, which takes `127.0.0.1%2f` or
/// `localhost%00.example.com` as a host (the address guard would then compare a name that no
/// resolver sees), and spaces on some platforms.
public struct URLShape: Sendable, Hashable {
    public var scheme: String
    /// `user:password`, when present.
    public var userInfo: String?
    /// A name (letters, digits, `-`, `.`, `_`, `~`) or a bracketed IPv6 literal.
    public var host: String
    public var port: Int?
    /// From the `/` after the authority up to `?` or `#` (may be empty).
    public var path: String
    public var query: String?
    public var fragment: String?

    /// The parts of `text`, or why it is not an http(s) URL jobctl accepts.
    public static func parse(_ text: String) -> Result<URLShape, URLShapeError> {
        func fail(_ why: String) -> Result<URLShape, URLShapeError> { .failure(URLShapeError(reason: why)) }
        // Printable ASCII only, none of the characters RFC 3986 leaves out of URLs.
        if let bad = text.unicodeScalars.first(where: {
            !($0.value > 0x20 && $0.value < 0x7F) || "\"<>\\^`{|}".unicodeScalars.contains($0)
        }) {
            return fail(
                bad == " "
                    ? "a URL has no spaces (write %20)"
                    : "a URL has no \(bad.value < 0x20 || bad.value >= 0x7F ? "control or non-ASCII characters" : "'\(bad)'") (percent-encode it)"
            )
        }
        guard let separator = text.range(of: "://") else { return fail("not a URL: no scheme://") }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return fail("only http and https URLs are allowed") }
        var rest = text[separator.upperBound...]
        var fragment: String?
        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        }
        var query: String?
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        let path = String(rest[slash...])
        var userInfo: String?
        if let at = authority.lastIndex(of: "@") {
            userInfo = String(authority[..<at])
            authority = authority[authority.index(after: at)...]
        }
        var host = authority
        var port: Int?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return fail("an IPv6 host is closed with ]") }
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return fail("'\(after)' after the IPv6 host") }
                guard let number = Int(after.dropFirst()), (1...65535).contains(number) else {
                    return fail("the port is a number from 1 to 65535")
                }
                port = number
            }
            let inside = host.dropFirst().dropLast()
            let zone = inside.range(of: "%25").map { inside[$0.upperBound...] } ?? ""
            let address = inside.range(of: "%25").map { inside[..<$0.lowerBound] } ?? inside
            guard !address.isEmpty, address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }),
                zone.allSatisfy({ $0.isLetter || $0.isNumber || "-._~".contains($0) })
            else { return fail("'\(host)' is not an IPv6 address") }
        } else {
            if let colon = authority.lastIndex(of: ":") {
                host = authority[..<colon]
                guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                    return fail("the port is a number from 1 to 65535")
                }
                port = number
            }
            guard !host.isEmpty else { return fail("the URL has no host") }
            guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._~".contains($0)) }) else {
                return fail("'\(host)' is not a host name (letters, digits, '-' and '.'; no percent-encoding)")
            }
        }
        return .success(
            URLShape(
                scheme: scheme,
                userInfo: userInfo,
                host: String(host),
                port: port,
                path: path,
                query: query,
                fragment: fragment
            )
        )
    }

    /// A file set's URL template with `{name}` read as a path segment, or `nil` when malformed.
    public static func parseTemplate(_ text: String) -> URLShape? {
        try? parse(text.replacingOccurrences(of: "{name}", with: "name")).get()
    }

    /// Whether the path has a `.` or `..` segment (also percent-encoded): a server resolves
    /// them, so two different templates could name one object.
    public var hasDotSegments: Bool {
        // Split as bytes (a URL here is ASCII, checked by `parse`).
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains { segment in
            let decoded = String(decoding: segment, as: UTF8.self).lowercased()
                .replacingOccurrences(of: "%2e", with: ".")
            return decoded == "." || decoded == ".."
        }
    }
}

/// Why a URL is not one jobctl accepts.
public struct URLShapeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var reason: String
    public var description: String { reason }
}
