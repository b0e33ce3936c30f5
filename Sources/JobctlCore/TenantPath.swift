/// Where an API key's local files live: its own directory under each root, `ROOT/KEYID/`
/// (docs/security.md, "Tenants"). The jobs a key submits name local paths relative to that
/// directory (`talk.mov`, `exports/talk.mp4`); the job row keeps them relative, so the job JSON,
/// webhooks and listings never show the host's layout, and only a worker that knows the roots
/// can turn them into files, inside that key's directory and nowhere else.
public enum TenantPath {
    /// Why `path` cannot name a file in a tenant's directory, or `nil`: it is relative, has no
    /// empty, `.` or `..` segment, no NUL, and at most 4096 bytes.
    public static func problem(_ path: String) -> String? {
        if path.isEmpty || path.utf8.count > 4096 || path.contains("\0") {
            return "a local path is 1 to 4096 bytes"
        }
        if path.hasPrefix("/") {
            return
                "local paths are relative to this key's own directory under the server's root ('talk.mov', 'exports/talk.mp4'), not absolute"
        }
        if hasEmptyOrDotSegment(path) { return "a local path has no empty, '.' or '..' segment" }
        return nil
    }

    /// Whether `path` has an empty or `..` segment (or `.`, unless `allowingDot`). Bytes, as the
    /// file system reads them: split as Characters, a combining mark after a `/` would hide the
    /// `/` (and a `..` before it) inside one grapheme.
    public static func hasEmptyOrDotSegment(_ path: String, allowingDot: Bool = false) -> Bool {
        let dot = UInt8(ascii: ".")
        return path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains {
            $0.isEmpty || (!allowingDot && $0.elementsEqual([dot])) || $0.elementsEqual([dot, dot])
        }
    }

    /// Whether `owner` (an API key's id) can be a directory name: letters and digits only.
    public static func isDirectoryName(_ owner: String) -> Bool {
        !owner.isEmpty && owner.utf8.count <= 64 && owner.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// `ROOT/OWNER`.
    public static func directory(root: String, owner: String) -> String {
        (root.hasSuffix("/") ? root : root + "/") + owner
    }

    /// The file `path` (checked with `problem`) names for `owner` under `root`.
    public static func resolve(_ path: String, root: String, owner: String) -> String {
        directory(root: root, owner: owner) + "/" + path
    }
}
