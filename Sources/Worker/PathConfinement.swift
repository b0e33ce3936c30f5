import Foundation
import JobctlCore
import Media
import Queue

/// `--input-root` / `--output-root` (docs/spec.md §7): a worker reads and writes local files only under
/// these directories. Paths are compared after resolving `..` and symlinks, so neither can
/// lead outside. Remote (`http(s)`) inputs and outputs are not paths and are not confined here
/// (the address guard covers them).
struct PathConfinement: Sendable {
    /// Resolved roots; `nil` means unconfined.
    let inputRoot: String?
    let outputRoot: String?

    init(inputRoot: String?, outputRoot: String?) {
        self.inputRoot = inputRoot.map(Self.resolved)
        self.outputRoot = outputRoot.map(Self.resolved)
    }

    /// `input_not_found` for an input outside the root (whether it exists there is not said).
    func checkInput(_ path: String) throws(JobFailure) {
        guard let root = inputRoot, !MediaLocation.isRemote(path) else { return }
        let local = path.lowercased().hasPrefix("file://") ? (URL(string: path)?.path ?? path) : path
        guard Self.isInside(Self.resolved(local), root) else {
            throw JobFailure(
                error: JobError(
                    code: .inputNotFound,
                    message: "\(path) does not exist under this worker's --input-root",
                    retryable: false
                )
            )
        }
    }

    /// `output_forbidden` for an output outside the root. The directory is resolved (it must
    /// exist to be written to anyway), and so is the file if it is already there (a symlink).
    func checkOutput(_ path: String) throws(JobFailure) {
        guard let root = outputRoot, !MediaLocation.isRemote(path) else { return }
        let directory = Self.resolved((path as NSString).deletingLastPathComponent)
        let name = (path as NSString).lastPathComponent
        let target = Self.resolved((directory as NSString).appendingPathComponent(name))
        guard name != "..", name != ".", Self.isInside(directory, root) || directory == root,
            Self.isInside(target, root)
        else {
            throw JobFailure(
                error: JobError(
                    code: .outputForbidden,
                    message: "\(path) is outside this worker's --output-root",
                    retryable: false
                )
            )
        }
    }

    /// `output_forbidden` when a directory opened for a job's files (its real path, through
    /// the descriptor) is not under the root: it was swapped for a link after the first check.
    func checkOpenedOutputDirectory(_ real: String?, shownAs path: String) throws(JobFailure) {
        guard let root = outputRoot else { return }
        guard let real, real == root || Self.isInside(real, root) else {
            throw JobFailure(
                error: JobError(
                    code: .outputForbidden,
                    message: "\(path) is outside this worker's --output-root",
                    retryable: false
                )
            )
        }
    }

    static func resolved(_ path: String) -> String { OutputDestination.resolved(path) }

    private static func isInside(_ path: String, _ root: String) -> Bool {
        root == "/" || path.hasPrefix(root.hasSuffix("/") ? root : root + "/")
    }
}
