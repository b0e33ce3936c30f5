import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP
import Submission

/// A `thumbnails`, `storyboard` or `waveform` job made ready to run: its asset opened and its
/// session built from the options stored with the job (`presetSettings`). Its outputs are a set
/// of files written into the output directory as hidden temporaries (or into the staging
/// directory when they are uploaded) and shown all at once.
///
/// A remote output is a URL template: `{name}` is replaced by each file's name
/// (`https://bucket.example/thumbs/{name}?sig=…` → `…/thumbs/thumb-001.jpg?sig=…`).
struct FileSetJob: PreparedJob {
    enum Work: Sendable {
        case thumbnails(ThumbnailSession)
        case storyboard(StoryboardSession)
        case waveform(WaveformReader)
    }

    let job: Job
    let work: Work
    let uploadURL: String?
    /// Where the files are staged: the output directory, or the staging directory.
    let directory: String
    let tag: String
    /// Checked again once the directory is open (it may have been swapped for a link).
    let confinement: PathConfinement

    var progress: Double {
        switch work {
        case .thumbnails(let session): session.progress
        case .storyboard(let session): session.progress
        case .waveform(let reader): reader.progress
        }
    }

    var tracks: [JobTrack] { [] }

    func cancel() {
        switch work {
        case .thumbnails(let session): session.cancel()
        case .storyboard(let session): session.cancel()
        case .waveform(let reader): reader.cancel()
        }
    }

    static func prepare(_ job: Job, lease: Lease, options: WorkerOptions, sender: HTTPSender) async throws -> FileSetJob
    {
        // The stored options first: a row that does not read costs no input.
        enum Stored {
            case thumbnails(ThumbnailOptions)
            case storyboard(StoryboardOptions)
            case waveform(WaveformOptions)
        }
        let stored: Stored
        switch job.kind {
        case .thumbnails: stored = .thumbnails(try job.storedOptions())
        case .storyboard: stored = .storyboard(try job.storedOptions())
        case .waveform: stored = .waveform(try job.storedOptions())
        case .export, .noop:
            throw MediaError(.internalError, "a \(job.kind) job was given to the file-set runner")
        }
        let range = try job.timeRange()
        let paths = try JobPaths.resolve(job, options: options)
        let confinement = paths.confinement
        let uploadURL = MediaLocation.isRemote(job.output) ? job.output : nil
        // Submit refuses a template whose files could share a URL ({name} outside the path, a
        // dot segment); a row written around it must not lose a set either.
        if let problem = Submission.outputProblem(job.output, kind: job.kind) {
            throw MediaError(.outputForbidden, problem)
        }
        let directory: String
        if uploadURL != nil {
            try RemoteMedia.createStagingDirectory(options.stagingDirectory)
            directory = options.stagingDirectory
        } else {
            directory = paths.output
        }
        StagedFiles.removeLeftovers(in: directory, tagPrefix: "\(job.id)-")
        let asset = try await onDedicatedThread("jobctl.open") { () throws -> Asset in
            if MediaLocation.isRemote(job.input) { try RemoteMedia.checkInput(job.input, sender: sender) }
            return try Asset(location: paths.input, limits: options.limits)
        }
        let work: Work
        switch stored {
        case .thumbnails(let options):
            work = .thumbnails(try ThumbnailSession(asset: asset, options: options, timeRange: range))
        case .storyboard(let options):
            work = .storyboard(try StoryboardSession(asset: asset, options: options, timeRange: range))
        case .waveform(let options):
            work = .waveform(try WaveformReader(asset: asset, options: options, timeRange: range))
        }
        return FileSetJob(
            job: job,
            work: work,
            uploadURL: uploadURL,
            directory: directory,
            tag: lease.temporaryTag,
            confinement: uploadURL == nil ? confinement : PathConfinement(inputRoot: nil, outputRoot: nil)
        )
    }

    func run() async throws -> FinishedRun {
        let (directory, tag, work, uploadURL, confinement) = (directory, tag, work, uploadURL, confinement)
        let kind = job.kind
        let staged = try await withTaskCancellationHandler {
            try await onDedicatedThread("jobctl.\(job.kind)") { () throws -> Staged in
                let files = try StagedFiles(directory: directory, tag: tag)
                // A local directory holds the job's set: a rerun replaces it whole (an upload's
                // staging directory holds many jobs' files, and is emptied anyway).
                if uploadURL == nil { files.replacesSet = Self.isSetFile(of: kind) }
                try confinement.checkOpenedOutputDirectory(files.resolvedDirectory, shownAs: directory)
                let details: JSONValue
                switch work {
                case .thumbnails(let session): details = try Self.json(["images": try session.run(into: files)])
                case .storyboard(let session):
                    let result = try session.run(into: files)
                    details = try Self.json(
                        [
                            "storyboard": Storyboard(
                                description: result.description,
                                columns: result.columns,
                                rows: result.rows
                            )
                        ]
                    )
                case .waveform(let reader):
                    let result = try reader.run(into: files)
                    details = try Self.json(
                        [
                            "waveform": Waveform(
                                sampleRate: result.sampleRate,
                                samplesPerPixel: result.samplesPerPixel,
                                channels: result.channels,
                                bits: reader.options.bits,
                                length: result.length,
                                duration: result.duration
                            )
                        ]
                    )
                }
                return Staged(held: HeldFiles(files, uploadTemplate: uploadURL), details: details)
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

    /// How a kind's set files are named (a rerun replaces the earlier set of its kind).
    static func isSetFile(of kind: JobKind) -> @Sendable (String) -> Bool {
        switch kind {
        case .thumbnails: ThumbnailSession.isSetFile
        case .storyboard: StoryboardSession.isSetFile
        default: { [WaveformOutputs.jsonName, WaveformOutputs.datName, WaveformOutputs.pngName].contains($0) }
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

    struct Storyboard: Encodable {
        var description: StoryboardDescription
        var columns: Int
        var rows: Int
    }

    struct Waveform: Encodable {
        var sampleRate: Int
        var samplesPerPixel: Int
        var channels: Int
        var bits: Int
        var length: Int
        var duration: Double
    }

    private static func json(_ value: some Encodable) throws(JobError) -> JSONValue {
        do {
            return try JSONValue(encoding: value)
        } catch {
            throw JobError.unstorableResult(error)
        }
    }

    // MARK: Uploads

    /// The template with `{name}` replaced by `name` (our names need no escaping).
    static func url(of name: String, in template: String) -> String {
        template.replacingOccurrences(of: "{name}", with: name)
    }

    static func contentType(of name: String) -> String {
        switch (name as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "webp": "image/webp"
        case "vtt": "text/vtt"
        case "json": "application/json"
        default: "application/octet-stream"
        }
    }
}
