import Foundation
import JobctlCore
import Media
import Queue

/// `--input-root` / `--output-root` (docs/spec.md §7): the one fence around local files, for
/// the API (which places a key's relative paths under them) and the worker (which reads and
/// writes only under them). The roots are kept as given, tidied lexically (`..`, `.`, a
/// trailing `/`): what the API joins a key's paths to. The checks compare real paths (`..`
/// and symbolic links resolved, the root's too, at the time of the check), so neither can lead
/// outside. Remote (`http(s)`) inputs and outputs are not paths and are not confined here (the
/// address guard covers them).
///
/// The API confines a key's jobs to its own directory under each root (`ROOT/KEYID/`,
/// `TenantPath`), and without a root takes only http(s) URLs: a client is not the host's user
/// (it could read `/etc/shadow` into an output it fetches, or another tenant's files).
public struct PathConfinement: Sendable, Hashable {
    /// The roots, tidied lexically; `nil` means unconfined.
    public let inputRoot: String?
    public let outputRoot: String?
    /// `--s3-root`: the `s3://` prefix under which each API key has its own, `ROOT/KEYID/`
    /// (`TenantObjects`); `nil`: no `s3://` for API keys.
    public let objectRoot: String?

    public init(inputRoot: String? = nil, outputRoot: String? = nil, objectRoot: String? = nil) {
        self.inputRoot = inputRoot.map(Self.tidied)
        self.outputRoot = outputRoot.map(Self.tidied)
        self.objectRoot = objectRoot
    }

    /// `path` without `..`, `.` or a trailing `/`, by its text alone.
    public static func tidied(_ path: String) -> String {
        let standardized = (path as NSString).standardizingPath
        return standardized.count > 1 && standardized.hasSuffix("/") ? String(standardized.dropLast()) : standardized
    }

    /// `input_not_found` for an input outside the root (whether it exists there is not said).
    public func checkInput(_ path: String) throws(JobError) {
        guard let root = inputRoot.map(Self.resolved), !MediaLocation.isRemote(path) else { return }
        let local = path.lowercased().hasPrefix("file://") ? (URL(string: path)?.path ?? path) : path
        guard Self.isInside(Self.resolved(local), root) else {
            throw JobError(
                code: .inputNotFound,
                message: "\(path) does not exist under this worker's --input-root",
                retryable: false
            )
        }
    }

    /// `output_forbidden` for an output outside the root. The directory is resolved (it must
    /// exist to be written to anyway), and so is the file if it is already there (a symlink).
    public func checkOutput(_ path: String) throws(JobError) {
        guard let root = outputRoot.map(Self.resolved), !MediaLocation.isRemote(path) else { return }
        let directory = Self.resolved(PathText.parent(of: path))
        let name = (path as NSString).lastPathComponent
        let target = Self.resolved((directory as NSString).appendingPathComponent(name))
        guard name != "..", name != ".", Self.isInside(directory, root) || directory == root,
            Self.isInside(target, root)
        else {
            throw JobError(
                code: .outputForbidden,
                message: "\(path) is outside this worker's --output-root",
                retryable: false
            )
        }
    }

    /// `output_forbidden` when a directory opened for a job's files (its real path, through
    /// the descriptor) is not under the root: it was swapped for a link after the first check.
    public func checkOpenedOutputDirectory(_ real: String?, shownAs path: String) throws(JobError) {
        guard let root = outputRoot.map(Self.resolved) else { return }
        guard let real, real == root || Self.isInside(real, root) else {
            throw JobError(
                code: .outputForbidden,
                message: "\(path) is outside this worker's --output-root",
                retryable: false
            )
        }
    }

    public static func resolved(_ path: String) -> String { OutputDestination.resolved(path) }

    private static func isInside(_ path: String, _ root: String) -> Bool {
        root == "/" || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
