import Foundation
import JobctlCore
import Media
import Queue

/// A job that runs as a graph (issue 27): its first attempt fans out into children
/// (`PreparedJob.fanOut`), its last (the join, once every child completed) makes its result
/// from theirs. Two graphs exist: one upload with several outputs (`--also`, here), and a
/// split export (`ExportKind`, `SplitExport`).
public struct AlsoOutput: Codable, Sendable, Hashable {
    /// The output's kind, preset (the kind's name for a file set) and stored options, as a job
    /// of its own would have them.
    public var kind: JobKind
    public var preset: String
    public var settings: JSONValue
    public var output: String
    public var format: String?
}

/// What an attempt of a graph's parent does.
enum GraphStep {
    /// The children to create, in index order.
    case fanOut([JobRequest])
    /// Every child completed: the result from theirs (index order).
    case join([Job])
}

extension Job {
    /// The extra outputs of a `--also` submission (its role's plan; none for any other job).
    /// A plan that does not read fails the job, `database_corrupt`.
    func alsoOutputs() throws(JobError) -> [AlsoOutput] {
        guard case .parent(.outputs(let value)) = role else { return [] }
        do {
            return try value.decoded(as: [AlsoOutput].self)
        } catch {
            throw JobError(
                code: .databaseCorrupt,
                message: "job \(id): its extra outputs cannot be read (\(error)); the row was changed outside jobctl",
                retryable: false
            )
        }
    }

    /// This job's own part as a child: everything but the graph's settings, no webhook, no
    /// idempotency key (children are silent and never submitted on their own).
    func childRequest(
        kind: JobKind,
        preset: String,
        settings: JSONValue,
        output: String,
        format: String?
    )
        -> JobRequest
    {
        JobRequest(
            kind: kind,
            input: input,
            output: output,
            preset: preset,
            presetSettings: settings,
            format: format,
            range: range,
            priority: priority,
            maxAttempts: maxAttempts,
            idempotencyKey: nil,
            metadata: metadata,
            webhook: nil,
            owner: owner
        )
    }

    /// The step of a `--also` parent: fan out into its own output then each extra one, or
    /// join them.
    func alsoStep(_ also: [AlsoOutput], children: [Job]) throws(JobError) -> GraphStep {
        switch graphPhase {
        case .none:
            return .fanOut(
                [childRequest(kind: kind, preset: preset, settings: presetSettings, output: output, format: format)]
                    + also.map {
                        childRequest(
                            kind: $0.kind,
                            preset: $0.preset,
                            settings: $0.settings,
                            output: $0.output,
                            format: $0.format
                        )
                    }
            )
        case .join:
            return .join(children)
        case .waiting:
            throw JobError(
                code: .internalError,
                message: "job \(id) was claimed while its children run",
                retryable: false
            )
        }
    }
}

/// A parent's first attempt: nothing to run, children to create. The worker calls the store's
/// `fanOut` instead of `run()`.
struct FanOutJob: PreparedJob {
    let children: [JobRequest]
    var fanOut: [JobRequest]? { children }
    var progress: Double { 0 }
    var tracks: [JobTrack] { [] }
    var uploadURL: String? { nil }
    func cancel() {}
    func run() async throws -> FinishedRun {
        throw JobError(code: .internalError, message: "a fan-out was run instead of fanned out")
    }
}

/// The join of a `--also` parent: no file of its own (each child published its output); the
/// result is its first child's (the output the job was submitted for), with every child's
/// under `outputs`, in the order they were asked for.
struct OutputsJoin: PreparedJob {
    let children: [Job]
    var progress: Double { 1 }
    var tracks: [JobTrack] { [] }
    var uploadURL: String? { nil }
    func cancel() {}

    func run() async throws -> FinishedRun {
        let children = children.sorted { ($0.childIndex ?? 0) < ($1.childIndex ?? 0) }
        guard let first = children.first, children.allSatisfy({ $0.status == .completed }) else {
            throw JobError(code: .internalError, message: "the join found children that did not complete")
        }
        var result = first.result ?? .object([:])
        result.set("outputs", .array(children.map(JobGraphStateMachine.outputEntry)))
        let media = first.result?["duration"]?.doubleValue
        let joined = result
        return FinishedRun(held: NoOutput(), mediaSeconds: media) { _ in joined }
    }
}

/// Nothing to show: a join whose children published everything.
final class NoOutput: HeldOutput {
    var uploads: [HeldUpload] { [] }
    func commit() throws {}
    func discard() {}
}
