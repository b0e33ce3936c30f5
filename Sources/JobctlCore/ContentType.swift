import Foundation

/// What a file jobctl writes is, by its name's extension: the one table behind an upload's
/// `Content-Type` (HTTP PUT, object stores) and the dashboard's file responses (issue 43; three
/// tables had drifted apart).
public enum ContentType {
    static let byExtension: [String: String] = [
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "m4a": "audio/mp4",
        "m4s": "video/iso.segment", "m3u8": "application/vnd.apple.mpegurl", "mpd": "application/dash+xml",
        "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp",
        "vtt": "text/vtt", "json": "application/json", "html": "text/html; charset=utf-8",
    ]

    /// The type of a file named `name` (a path or a URL's last part), `nil` for a kind of file
    /// jobctl does not write.
    public static func of(_ name: String) -> String? {
        byExtension[(name as NSString).pathExtension.lowercased()]
    }

    /// The type an upload of `name` is sent with: its own, or `application/octet-stream`.
    public static func upload(_ name: String) -> String { of(name) ?? "application/octet-stream" }
}
