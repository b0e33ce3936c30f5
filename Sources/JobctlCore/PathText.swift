/// A path's directory part, written out by hand: Foundation's
/// `NSString.deletingLastPathComponent` traps on Linux for a one-character relative path
/// (`jobctl export in.mov -o a` crashed with an illegal instruction).
public enum PathText {
    /// The directory part of `path`: `""` for a bare name, `"/"` for a name at the root.
    /// Trailing slashes are ignored (`a/b/` is `a`), as Foundation's are.
    public static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        var parent = trimmed[..<slash]
        while parent.count > 1 && parent.hasSuffix("/") { parent = parent.dropLast() }
        return parent.isEmpty ? "/" : String(parent)
    }

    /// `parent(of:)`, or `"."` for a bare name: a directory to open.
    public static func directory(of path: String) -> String {
        let parent = parent(of: path)
        return parent.isEmpty ? "." : parent
    }
}
