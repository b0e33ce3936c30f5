import Foundation
import JobctlCore
import Media
import ObjectStorage
import Queue
import SafeHTTP

/// What a job row stores for its recipe, and where its output goes by default.
public struct SubmissionPlan: Sendable {
    /// The preset's name (exports) or the kind's name.
    public var preset: String
    /// The preset's settings, or the kind's options (`ThumbnailOptions`…), as JSON.
    public var settings: JSONValue
    /// The container of an export (`nil`: from the output's extension or the preset).
    public var format: String?
    /// Beside the input: `NAME.PRESET.EXT`, or the directory `NAME.KIND/`.
    public var defaultOutput: String

    public init(preset: String, settings: JSONValue, format: String?, defaultOutput: String) {
        self.preset = preset
        self.settings = settings
        self.format = format
        self.defaultOutput = defaultOutput
    }
}

/// The checks a job gets before it is queued, whoever submits it (`request` in
/// Submission+Request.swift), and the rules they share with the worker.
public enum Submission {
    /// What is wrong with `output` for a job of `kind`, or `nil`: `{name}` belongs in the path
    /// of a remote output of a file-set kind, and only there (in the user info, the host, the
    /// query or the fragment every file would go to one URL), and such an output needs it (each
    /// file is PUT to its own URL); the path of such a template has no `.` or `..` segment (a
    /// server resolves them: different names could land on one object). `name` is what the
    /// submitter calls the output (`--output`, `output`).
    public static func outputProblem(_ output: String, kind: JobKind, name: String = "output") -> String? {
        let writesFileSet = JobKinds.writesFileSet(kind)
        if MediaLocation.isObjectStore(output) {
            if writesFileSet && !output.contains("{name}") {
                return
                    "a \(kind) job writes several files: an s3:// \(name) is a key template with {name}, e.g. 's3://bucket/thumbs/{name}'"
            }
            if !writesFileSet && output.contains("{name}") {
                return "{name} in \(name) is for thumbnails, storyboard, waveform and hls jobs"
            }
            return S3Location.problem(with: output.replacingOccurrences(of: "{name}", with: "name")).map {
                "\(name): \($0)"
            }
        }
        let remote = MediaLocation.isHTTP(output)
        // Parsed with {name} as a word valid in every part, to find which parts it is in.
        let placeholder = "jobctl-name-placeholder"
        let shape =
            remote ? try? URLShape.parse(output.replacingOccurrences(of: "{name}", with: placeholder)).get() : nil
        let placeholderInPath = shape?.path.contains(placeholder) ?? false
        let placeholderElsewhere =
            shape.map { parts in
                [parts.userInfo, parts.host, parts.query, parts.fragment].contains {
                    $0?.contains(placeholder) ?? false
                }
            } ?? false
        if output.contains("{name}") && !writesFileSet {
            return "{name} in \(name) is for thumbnails, storyboard, waveform and hls jobs"
        }
        if output.contains("{name}") && (!remote || placeholderElsewhere) {
            return
                "{name} belongs in the path of a remote \(name), and only there, e.g. 'https://bucket.example/out/{name}?sig=...'"
        }
        if writesFileSet && remote {
            guard let template = URLShape.parseTemplate(output) else { return nil }  // the address guard says why
            guard placeholderInPath else {
                return
                    "a \(kind) job writes several files: a remote \(name) is a URL template with {name} in its path, e.g. 'https://bucket.example/out/{name}'"
            }
            if template.hasDotSegments {
                return "the path of \(name) has a '.' or '..' segment: files with different names could land on one URL"
            }
        }
        return nil
    }

    /// At most 32 entries, keys of 1 to 100 bytes, values up to 1000, 8 KB in all: metadata is
    /// carried by every listing, webhook and event, so it must stay small.
    public static func metadataProblem(_ metadata: [String: String]) -> String? {
        let total = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard metadata.count <= 32, total <= 8192,
            metadata.allSatisfy({ !$0.key.isEmpty && $0.key.utf8.count <= 100 && $0.value.utf8.count <= 1000 })
        else {
            return "metadata is at most 32 entries, keys of 1 to 100 bytes, values up to 1000, 8 KB in all"
        }
        return nil
    }

    /// What this host can see of a local output now (the worker checks again): never a device,
    /// a FIFO, a link or the input itself for an export; a directory (or nothing yet) for a set
    /// of files.
    public static func checkLocalOutput(_ output: String, input: String, writesFileSet: Bool) throws(MediaError) {
        guard !MediaLocation.isRemote(output) else { return }
        if writesFileSet {
            var info = stat()
            guard lstat(output, &info) == 0 else {
                // `out/talk.mp4/` with `out/talk.mp4` a file: the trailing `/` must not hide it.
                if errno == ENOTDIR { throw OutputDestination.fileInTheWay(of: output) }
                return
            }
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw MediaError(
                    .outputForbidden,
                    "\(output) exists and is not a directory (a symbolic link is refused too): the files go into a directory"
                )
            }
        } else {
            try OutputDestination.check(output, input: input)
        }
    }

    /// `NAME.SUFFIX` in the input's directory (the current directory for a URL), NAME being
    /// the input's name without its extension.
    public static func besideInput(_ input: String, suffix: String) -> String {
        let name =
            URL(string: input).flatMap { input.contains("://") ? $0.lastPathComponent : nil }
            ?? (input as NSString).lastPathComponent
        let stem = (name as NSString).deletingPathExtension
        let directory =
            input.contains("://")
            ? FileManager.default.currentDirectoryPath : PathText.parent(of: input)
        return (directory as NSString).appendingPathComponent("\(stem.isEmpty ? "output" : stem).\(suffix)")
    }
}
