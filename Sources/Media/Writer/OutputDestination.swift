import Foundation
import JobctlCore

/// What may be at an output path (docs/spec.md §4): nothing yet, or a regular file, which the finished
/// output replaces atomically. Anything else that exists there — a device (`/dev/null`), a FIFO,
/// a socket, a directory, a symbolic link — and the input itself are refused with
/// `output_forbidden` before any work starts, and checked again just before the rename.
///
/// A symbolic link is refused rather than followed or replaced: following it would write
/// wherever it points (outside a confined output directory, or over a device), and replacing
/// it would silently turn a link into a file. Name the file itself.
public enum OutputDestination {
    /// Checks `path` as the destination of an export of `input` (a local path or an
    /// `http(s)` URL; remote inputs cannot be the output). Does not check the directory.
    public static func check(_ path: String, input: String?) throws(MediaError) {
        if path.hasSuffix("/") {
            throw MediaError(
                .outputForbidden,
                "\(path) ends in /, which names a directory: an export writes one file; name it (out/talk.mp4)"
            )
        }
        try checkKind(path)
        guard let input, !MediaLocation.isRemote(input) else { return }
        let inputPath = input.lowercased().hasPrefix("file://") ? (URL(string: input)?.path ?? input) : input
        if isSameFile(inputPath, path) {
            throw MediaError(
                .outputForbidden,
                "\(path) is the input itself: writing it would replace the source with its own transcode; choose another output"
            )
        }
    }

    /// `output_forbidden` if something other than a regular file exists at `path`, or if a
    /// file stands where a directory of it should be (`out/talk.mp4/x.mp4`, or `out/talk.mp4/`
    /// when `out/talk.mp4` is a file).
    public static func checkKind(_ path: String) throws(MediaError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            // Nothing there, or not reachable: the writer says why, unless a file is in the way.
            if errno == ENOTDIR { throw fileInTheWay(of: path) }
            return
        }
        try refuse(info.st_mode & S_IFMT, path) { try? FileManager.default.destinationOfSymbolicLink(atPath: path) }
    }

    /// Checks the directory an output goes into, as the writer would only once the work is done
    /// (a split export's join): `output_unwritable` when it does not exist, `output_forbidden`
    /// when a file stands where it or one of its parents should be. Then `checkKind`.
    public static func checkDirectory(of path: String) throws(MediaError) {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var info = stat()
        guard stat(directory, &info) == 0 else {
            if errno == ENOTDIR { throw fileInTheWay(of: path) }
            throw MediaError(.outputUnwritable, "\(path): the directory \(directory) does not exist")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw fileInTheWay(of: path) }
        try checkKind(path)
    }

    /// `output_forbidden` naming the first part of `path` that exists and is not a directory
    /// although more of the path follows it (a trailing `/` says the last part is a directory).
    public static func fileInTheWay(of path: String) -> MediaError {
        let components = path.split(separator: "/")
        var prefix = ""
        for (position, component) in components.enumerated()
        where position < components.count - 1 || path.hasSuffix("/") {
            prefix = prefix.isEmpty && !path.hasPrefix("/") ? String(component) : prefix + "/" + component
            var info = stat()
            if stat(prefix, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
                return MediaError(
                    .outputForbidden,
                    "\(path): \(prefix) is a file, not a directory"
                )
            }
        }
        return MediaError(.outputForbidden, "\(path): a part of it is a file, not a directory")
    }

    /// `checkKind` for `name` in the directory open as `directory` (`path` is how it is shown).
    static func checkKind(in directory: Int32, name: String, shownAs path: String) throws(MediaError) {
        var info = stat()
        guard fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return }
        try refuse(info.st_mode & S_IFMT, path) {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlinkat(directory, name, &buffer, buffer.count - 1)
            return count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        }
    }

    private static func refuse(_ kind: mode_t, _ path: String, linkTarget: () -> String?) throws(MediaError) {
        guard kind != S_IFREG else { return }
        let what: String
        switch kind {
        case S_IFCHR: what = "a character device"
        case S_IFBLK: what = "a block device"
        case S_IFIFO: what = "a FIFO (named pipe)"
        case S_IFSOCK: what = "a socket"
        case S_IFDIR: what = "a directory"
        case S_IFLNK:
            let target = linkTarget().map { " to \($0)" } ?? ""
            throw MediaError(
                .outputForbidden,
                "\(path) is a symbolic link\(target): jobctl replaces only regular files; name the file itself"
            )
        default: what = "not a regular file"
        }
        throw MediaError(.outputForbidden, "\(path) is \(what): jobctl replaces only regular files")
    }

    /// Whether `a` and `b` name the same file: the same device and inode (hard links and
    /// symbolic links included), or, when they do not exist, the same path once `..`, `.` and
    /// symbolic links in their directories are resolved.
    static func isSameFile(_ a: String, _ b: String) -> Bool {
        var first = stat()
        var second = stat()
        if stat(a, &first) == 0 && stat(b, &second) == 0 {
            return first.st_dev == second.st_dev && first.st_ino == second.st_ino
        }
        return resolved(a) == resolved(b)
    }

    /// The path with `..`, `.` and every symbolic link resolved (`realpath`); for a path that
    /// does not exist, its longest existing ancestor resolved and the rest appended.
    public static func resolved(_ path: String) -> String {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        if let real = realpath(absolute, nil) {
            defer { free(real) }
            return String(cString: real)
        }
        let parent = PathText.parent(of: absolute)
        guard parent != absolute, !parent.isEmpty else { return absolute }
        let last = (absolute as NSString).lastPathComponent
        if last == ".." { return PathText.parent(of: resolved(parent)) }
        if last == "." { return resolved(parent) }
        return (resolved(parent) as NSString).appendingPathComponent(last)
    }
}
