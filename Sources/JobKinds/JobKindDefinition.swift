import Foundation
import JobctlCore
import Media
import Queue

/// One kind of job, in one file (Kinds/): what it takes from a submission, what it stores with
/// the job, the checks it makes before queueing, and how a worker runs it. Registered once, in
/// `JobKinds.all`; `jobctl submit`, `POST /v1/jobs` and the worker look kinds up by name
/// (after swift-jobs' `JobDefinition` and `JobRegistry`).
///
/// docs/architecture.md ("Adding a job kind") says what to write for a new one.
public protocol JobKindDefinition: Sendable {
    /// What a submission gives the kind, in its field (`"thumbnails": {…}` in the API's body):
    /// the API decodes it from JSON, `jobctl submit` fills it from its flags (or from
    /// `--options JSON`, which is that same JSON). Every property optional: a field left out
    /// takes the kind's default.
    associatedtype Request: Codable & Sendable
    /// What the job row stores (`presetSettings`) and every worker reads back: the checked
    /// request, with defaults settled, so all workers run the same thing.
    associatedtype Options: Codable & Sendable

    /// The kind's name: `--kind NAME`, `"kind": "NAME"`, the job's `kind`.
    static var kind: JobKind { get }
    /// The submission field that holds `Request` (`"preset"` for exports, else the kind's name).
    static var field: String { get }
    /// Whether the output is a directory of files (a URL template with `{name}` when remote)
    /// rather than one file.
    static var writesFileSet: Bool { get }

    /// The request (`nil`: its field was not given) checked into options. `format` is the
    /// submission's `format`. Refusals name the field (`rules.invalid`).
    static func options(
        from request: Request?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> Options

    /// What the job row stores, with the checks a local input allows (`input.check`: its
    /// tracks against the options). `format` is the submission's (checked by `options`);
    /// `output` the submitted output when there is one.
    static func plan(
        _ options: Options,
        format: String?,
        input: LocalInput,
        output: String?
    ) throws(MediaError) -> SubmissionPlan

    /// A claimed job of this kind made ready to run: its input opened, its work built from
    /// `options` (as stored with the job). Errors are the job's.
    static func prepare(_ job: Job, options: Options, context: RunContext) async throws -> any PreparedJob
}

extension JobKindDefinition {
    public static var field: String { kind.rawValue }
    public static var writesFileSet: Bool { true }

    /// The kind's field as JSON (`nil`: not given) through `options(from:format:rules:)`;
    /// a field of the wrong shape is refused naming the part that is wrong.
    static func options(
        field value: JSONValue?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError)
        -> Options
    {
        let request: Request?
        do {
            request = try value.map { try $0.decoded(as: Request.self) }
        } catch let error as DecodingError {
            throw SubmissionError.decoding(error, under: field, rules: rules)
        } catch {
            throw rules.invalid(field, "is not valid: \(error)")
        }
        return try options(from: request, format: format, rules: rules)
    }

    /// `options` as the job row stores them.
    static func stored(_ options: Options) throws(MediaError) -> JSONValue {
        do {
            return try JSONValue(encoding: options)
        } catch {
            throw MediaError(.presetUnknown, "the job's settings cannot be stored: \(error)")
        }
    }

    /// The job's stored options read back (`database_corrupt` if they do not read), then
    /// `prepare`.
    static func prepareStored(_ job: Job, context: RunContext) async throws -> any PreparedJob {
        let options: Options = try job.storedOptions()
        return try await prepare(job, options: options, context: context)
    }

    /// A kind's plan for a set of files: the kind's name stored as the preset, the directory
    /// `NAME.KIND/` beside the input by default.
    static func fileSetPlan(_ options: Options, input: LocalInput) throws(MediaError) -> SubmissionPlan {
        SubmissionPlan(
            preset: kind.rawValue,
            settings: try stored(options),
            format: nil,
            defaultOutput: Submission.besideInput(input.location, suffix: kind.rawValue)
        )
    }
}

/// Every kind a submission may name, each registered by one line here.
public enum JobKinds {
    public static let all: [any JobKindDefinition.Type] = [
        ExportKind.self,
        ThumbnailsKind.self,
        StoryboardKind.self,
        WaveformKind.self,
        HLSKind.self,
    ]

    /// The kind named `kind`, or `nil` (`noop`, the queue's own, is not one of them).
    public static func named(_ kind: JobKind) -> (any JobKindDefinition.Type)? {
        all.first { $0.kind == kind }
    }

    /// The names, for help and messages: `export, thumbnails, storyboard or waveform`.
    public static var names: String {
        let names = all.map { $0.kind.rawValue }
        return names.dropLast().joined(separator: ", ") + (names.count > 1 ? " or " : "") + (names.last ?? "")
    }

    /// Whether jobs of `kind` write a set of files (false for a kind this version lacks).
    public static func writesFileSet(_ kind: JobKind) -> Bool { named(kind)?.writesFileSet ?? false }

    /// A claimed job's work, by its kind. A kind this worker does not know (a newer jobctl
    /// submitted it, or the row was changed) fails the job, naming the kind, not retried.
    public static func prepare(_ job: Job, context: RunContext) async throws -> any PreparedJob {
        guard let definition = named(job.kind) else {
            throw JobError(
                code: .databaseCorrupt,
                message:
                    "job \(job.id) has kind '\(job.kind.rawValue.prefix(40))', which this worker does not know (a newer jobctl submitted it, or the row was changed)",
                retryable: false
            )
        }
        // By the job's place in its graph (`JobRole`), then its phase.
        switch job.role {
        case .parent(.outputs):
            switch try job.alsoStep(try job.alsoOutputs(), children: context.children) {
            case .fanOut(let children): return FanOutJob(children: children)
            case .join(let children): return OutputsJoin(children: children)
            }
        case .parent(.split), .child(part: .some):
            guard let splittable = definition as? any SplittableKind.Type else {
                throw JobError(
                    code: .databaseCorrupt,
                    message:
                        "job \(job.id) is a part of a split \(job.kind.rawValue.prefix(40)) job, which cannot be split",
                    retryable: false
                )
            }
            return try await splittable.prepareInGraph(job, context: context)
        case .standalone, .child(part: nil):
            return try await definition.prepareStored(job, context: context)
        }
    }

    /// The kinds a fleet can split (`--split`).
    static func splittable(_ kind: JobKind) -> (any SplittableKind.Type)? {
        named(kind) as? any SplittableKind.Type
    }
}
