import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP

/// What a file-set kind does once its input is open (a `ThumbnailSession`, a
/// `StoryboardSession`, a `WaveformReader`), as `FileSetJob` runs it.
public protocol FileSetWork: Sendable {
    /// 0…1, for the job table.
    var progress: Double { get }
    /// Stops the running work soon; `run(into:)` then throws a cancellation.
    func cancel()
    /// Writes the set into `files` (hidden temporaries, shown together later) and returns the
    /// kind's part of the job's result (`{"images": …}`). Blocking: runs on a thread of its own.
    func run(into files: StagedFiles) throws -> JSONValue
    /// Whether a file in the output directory belongs to a set of this kind (a rerun replaces
    /// the earlier set).
    static var isSetFile: @Sendable (String) -> Bool { get }
}

/// A kind whose output is a set of files: its work on an opened input is all it adds to a
/// `JobKindDefinition`. The look at a local input at submission builds that work too (to refuse
/// an input it cannot do), and the worker runs it through `FileSetJob`.
public protocol FileSetKind: JobKindDefinition {
    associatedtype Work: FileSetWork
    static func work(on asset: Asset, options: Options, range: TimeRange) throws(MediaError) -> Work
}

extension FileSetKind {
    public static func plan(
        _ options: Options,
        format: String?,
        input: LocalInput,
        output: String?
    ) throws(MediaError) -> SubmissionPlan {
        try input.check { asset, range throws(MediaError) in _ = try work(on: asset, options: options, range: range) }
        return try fileSetPlan(options, input: input)
    }

    public static func prepare(_ job: Job, options: Options, context: RunContext) async throws -> any PreparedJob {
        try await FileSetJob.prepare(job, context: context) { asset, range in
            try work(on: asset, options: options, range: range)
        }
    }
}

/// A job of a kind that writes a set of files (thumbnails, a storyboard, a waveform) made ready
/// to run: its asset opened and its work built from the options stored with the job. Its
/// outputs are written into the output directory as hidden temporaries (or into the staging
/// directory when they are uploaded) and shown all at once.
///
/// A remote output is a URL template: `{name}` is replaced by each file's name
/// (`https://bucket.example/thumbs/{name}?sig=…` → `…/thumbs/thumb-001.jpg?sig=…`).
struct FileSetJob: PreparedJob {
    let job: Job
    let work: any FileSetWork
    let uploadURL: String?
    /// Where the files are staged: the output directory, or the staging directory.
    let directory: String
    let tag: String
    /// Checked again once the directory is open (it may have been swapped for a link).
    let confinement: PathConfinement
    /// Runs once the set is shown and the completion recorded.
    var afterPublished: (@Sendable () -> Void)? = nil

    var progress: Double { work.progress }

    var tracks: [JobTrack] { [] }

    func cancel() { work.cancel() }

    /// Opens the job's input and builds its work with `makeWork` (the kind's session on the
    /// asset and the job's range).
    static func prepare(
        _ job: Job,
        context: RunContext,
        makeWork: @escaping @Sendable (Asset, TimeRange) throws -> any FileSetWork
    ) async throws -> FileSetJob {
        let range = try job.timeRange()
        let paths = try JobPaths.resolve(job, context: context)
        let confinement = paths.confinement
        let uploadURL = MediaLocation.isRemote(job.output) ? job.output : nil
        // Submit refuses a template whose files could share a URL ({name} outside the path, a
        // dot segment); a row written around it must not lose a set either.
        if let problem = Submission.outputProblem(job.output, kind: job.kind) {
            throw MediaError(.outputForbidden, problem)
        }
        let directory: String
        if uploadURL != nil {
            try RemoteMedia.createStagingDirectory(context.stagingDirectory)
            directory = context.stagingDirectory
        } else {
            directory = paths.output
        }
        StagedFiles.removeLeftovers(in: directory, tagPrefix: "\(job.id)-")
        let limits = context.limits
        let work = try await onDedicatedThread("jobctl.open") { () throws -> any FileSetWork in
            let input = try ObjectStoreMedia.openable(paths.input, context: context)
            return try makeWork(try Asset(location: input, limits: limits), range)
        }
        return FileSetJob(
            job: job,
            work: work,
            uploadURL: uploadURL,
            directory: directory,
            tag: context.lease.temporaryTag,
            confinement: uploadURL == nil ? confinement : PathConfinement(inputRoot: nil, outputRoot: nil)
        )
    }

    func run() async throws -> FinishedRun {
        let (directory, tag, work, uploadURL, confinement) = (directory, tag, work, uploadURL, confinement)
        let afterPublished = afterPublished
        let isSetFile = type(of: work).isSetFile
        let staged = try await withTaskCancellationHandler {
            try await onDedicatedThread("jobctl.\(job.kind)") { () throws -> Staged in
                let files = try StagedFiles(directory: directory, tag: tag)
                // A local directory holds the job's set: a rerun replaces it whole (an upload's
                // staging directory holds many jobs' files, and is emptied anyway).
                if uploadURL == nil { files.replacesSet = isSetFile }
                try confinement.checkOpenedOutputDirectory(files.resolvedDirectory, shownAs: directory)
                let details = try work.run(into: files)
                let held = HeldFiles(files, uploadTemplate: uploadURL)
                held.afterPublished = afterPublished
                return Staged(held: held, details: details)
            }
        } onCancel: {
            cancel()
        }
        let (output, local, details) = (job.displayOutput, job.output, staged.details)
        return FinishedRun(held: staged.held, mediaSeconds: nil) { [files = staged.held.staged] uploaded in
            let listed = files.map { file in
                ResultFile(
                    name: file.name,
                    bytes: uploaded?[file.name] ?? file.bytes,
                    location: uploadURL.map { MediaLocation.displayed(Self.url(of: file.name, in: $0)) }
                        ?? (local as NSString).appendingPathComponent(file.name)
                )
            }
            var result: [String: JSONValue] = ["output": .string(output), "files": .array(listed.map(\.json))]
            if case .object(let fields) = details { result.merge(fields) { $1 } }
            return .object(result)
        }
    }

    // MARK: The result

    /// What the work thread hands back: the staged files, and the kind's part of the result.
    private struct Staged: Sendable {
        let held: HeldFiles
        let details: JSONValue
    }

    struct ResultFile {
        var name: String
        var bytes: Int64
        /// The file's path, or its URL without the query (the signature).
        var location: String

        var json: JSONValue {
            .object(["name": .string(name), "bytes": .number(Double(bytes)), "location": .string(location)])
        }
    }

    // MARK: Uploads

    /// The template with `{name}` replaced by `name` (our names need no escaping).
    static func url(of name: String, in template: String) -> String {
        template.replacingOccurrences(of: "{name}", with: name)
    }

}
