import Foundation
import JobctlCore
import Media
import Queue

/// Where a job's local input and output are on this host, and the fence around them.
///
/// A job of the CLI (no `owner`) names absolute paths, confined to `--input-root` /
/// `--output-root` when the worker has them. A job of an API key names paths relative to that
/// key's own directory under each root (`ROOT/KEYID/`, `TenantPath`): they are resolved here,
/// and confined to that directory (after symlinks), so one tenant's job can neither read nor
/// replace another tenant's files, whatever the names and links in its directory say.
package struct JobPaths: Sendable {
    /// The input to open: a URL, or a local path.
    package let input: String
    /// The output to write: a URL, or a local path.
    package let output: String
    package let confinement: PathConfinement

    /// The job's input alone, resolved and confined as `resolve` does: for a job whose output
    /// is not one of these paths (a split export's part, written into the scratch directory).
    package static func input(of job: Job, inputRoot: String?, objectRoot: String?) throws(JobError) -> String {
        var inputOnly = job
        inputOnly.output = MediaLocation.isRemote(job.input) ? job.input : "https://output.invalid/"
        return try resolve(inputOnly, inputRoot: inputRoot, outputRoot: nil, objectRoot: objectRoot).input
    }

    /// The job's input alone, with the roots of `context`.
    package static func input(of job: Job, context: RunContext) throws(JobError) -> String {
        try input(of: job, inputRoot: context.inputRoot, objectRoot: context.objectRoot)
    }

    /// The job's locations, with the roots of `context`.
    package static func resolve(_ job: Job, context: RunContext) throws(JobError) -> JobPaths {
        try resolve(job, inputRoot: context.inputRoot, outputRoot: context.outputRoot, objectRoot: context.objectRoot)
    }

    package static func resolve(
        _ job: Job,
        inputRoot: String?,
        outputRoot: String?,
        objectRoot: String? = nil
    ) throws(JobError) -> JobPaths {
        guard let owner = job.owner else {
            let confinement = PathConfinement(inputRoot: inputRoot, outputRoot: outputRoot)
            try confinement.checkInput(job.input)
            try confinement.checkOutput(job.output)
            return JobPaths(input: job.input, output: job.output, confinement: confinement)
        }
        func local(
            _ location: String,
            root: String?,
            flag: String,
            code: ErrorCode
        ) throws(JobError) -> (
            path: String, directory: String?
        ) {
            func refuse(_ why: String) -> JobError {
                JobError(code: code, message: "\(location): \(why)", retryable: false)
            }
            // Checked again here (a row written around the API's checks, or a server with
            // another root): the workers' credentials are not the key's.
            if MediaLocation.isObjectStore(location) {
                if let problem = TenantObjects.problem(location, root: objectRoot, owner: owner) {
                    throw refuse(problem)
                }
                return (location, nil)
            }
            guard !MediaLocation.isRemote(location) else { return (location, nil) }
            if let problem = TenantPath.problem(location) { throw refuse(problem) }
            guard TenantPath.isDirectoryName(owner) else { throw refuse("the job's owner '\(owner)' is not a key id") }
            guard let root else {
                throw refuse(
                    "a path of an API key's job is relative to its directory under \(flag), which this worker was not given"
                )
            }
            return (
                TenantPath.resolve(location, root: root, owner: owner), TenantPath.directory(root: root, owner: owner)
            )
        }
        let input = try local(job.input, root: inputRoot, flag: "--input-root", code: .inputNotFound)
        let output = try local(job.output, root: outputRoot, flag: "--output-root", code: .outputForbidden)
        // The key's output directory is made on its first job (only that level: the root is the
        // operator's, and what lies below is the key's to ask for).
        if let directory = output.directory, let root = outputRoot, FileManager.default.fileExists(atPath: root) {
            mkdir(directory, 0o755)
        }
        let confinement = PathConfinement(inputRoot: input.directory, outputRoot: output.directory)
        try confinement.checkInput(input.path)
        try confinement.checkOutput(output.path)
        return JobPaths(input: input.path, output: output.path, confinement: confinement)
    }

    /// `error` as the job's owner may see it: its directories taken out of paths in the message
    /// (as given and as resolved), and the worker's own (`workerDirectories`: the scratch and
    /// staging directories, where a split export's parts and uploads wait), so a tenant sees
    /// its relative paths (`PARENTID.split/segment-00001.mp4`), not the host's layout.
    package static func shown(
        _ error: JobError,
        for job: Job,
        inputRoot: String?,
        outputRoot: String?,
        workerDirectories: [String] = []
    ) -> JobError {
        guard let owner = job.owner, TenantPath.isDirectoryName(owner) else { return error }
        var error = error
        let directories =
            [inputRoot, outputRoot].compactMap { $0 }.map { TenantPath.directory(root: $0, owner: owner) }
            + workerDirectories.filter { !MediaLocation.isRemote($0) }.map(PathConfinement.tidied)
        for directory in directories {
            for prefix in Set([directory, PathConfinement.resolved(directory)]) where prefix != "/" {
                error.message = error.message.replacingOccurrences(of: prefix + "/", with: "")
            }
        }
        return error
    }
}
