import Foundation
import JobctlCore
import Media
import Queue

/// A kind whose work a fleet can share (issue 43): a parent (`JobRole.parent(.split)`) cuts it
/// into parts on its first attempt, children (`JobRole.child(part:)`) each make one, and the
/// parent's last attempt joins them. The kind declares the three steps and its part type; the
/// dispatcher (`JobKinds.prepare`) picks one by the job's role and graph phase, so no kind reads
/// another's options and the worker reads none. Registered by conforming: `export` (segments
/// of video and the audio) and `hls` (chunks of whole 6 s segments).
///
/// docs/architecture.md ("Adding a kind that can split") says what to write.
protocol SplittableKind: JobKindDefinition {
    /// A child's share of the work, stored in its role (`JobRole.child(part:)`).
    associatedtype Part: Codable & Sendable

    /// `split` checked for a request of this kind (its options stored in `request`), beyond
    /// the request's own syntax; refusals name the field `split`.
    static func check(_ split: SplitRequest, for request: JobRequest, rules: SubmissionRules) throws(SubmissionError)

    /// The parent's first attempt: its children (each with its part in its role), or `nil`
    /// when the work runs whole after all (`auto` with one worker alive, a short input, a plan
    /// of one part).
    static func fanOut(
        _ job: Job,
        options: Options,
        split: SplitRequest,
        context: RunContext
    ) async throws
        -> FanOutJob?

    /// A child: its part of the work.
    static func preparePart(
        _ job: Job,
        options: Options,
        part: Part,
        context: RunContext
    ) async throws
        -> any PreparedJob

    /// The parent's last attempt, every child completed: the parts joined and published.
    static func prepareJoin(_ job: Job, options: Options, context: RunContext) async throws -> any PreparedJob
}

extension SplittableKind {
    /// A child's role with `part` (what a fan-out gives each child request).
    static func role(of part: Part) throws(JobError) -> JobRole {
        do {
            return .child(part: try JSONValue(encoding: part))
        } catch {
            throw JobError(code: .internalError, message: "a part of a \(kind) job cannot be stored: \(error)")
        }
    }

    /// The part a child's role holds (`nil`: not a child with a part); a part that does not
    /// read fails the job, `database_corrupt`.
    static func part(of job: Job) throws(JobError) -> Part? {
        guard let value = job.role.part else { return nil }
        do {
            return try value.decoded(as: Part.self)
        } catch {
            throw JobError(
                code: .databaseCorrupt,
                message: "job \(job.id): its part of a split \(kind) job cannot be read (\(error))",
                retryable: false
            )
        }
    }

    /// A parent's split request as its role keeps it; one that does not read fails the job,
    /// `database_corrupt` (it was checked at submission).
    static func split(of job: Job) throws(JobError) -> SplitRequest? {
        guard let value = job.role.split else { return nil }
        guard let text = value.stringValue, let split = try? SplitRequest(parsing: text) else {
            throw JobError(
                code: .databaseCorrupt,
                message: "job \(job.id): its split request cannot be read; the row was changed outside jobctl",
                retryable: false
            )
        }
        return split
    }

    /// A job of this kind in a split graph, by its role and phase: a part, a fan-out (or the
    /// whole work when the kind declines to split), or the join.
    static func prepareInGraph(_ job: Job, context: RunContext) async throws -> any PreparedJob {
        let options: Options = try job.storedOptions()
        if let part = try part(of: job) {
            return try await preparePart(job, options: options, part: part, context: context)
        }
        guard let split = try split(of: job) else { return try await prepare(job, options: options, context: context) }
        switch job.graphPhase {
        case .none:
            if let fanOut = try await fanOut(job, options: options, split: split, context: context) { return fanOut }
            return try await prepare(job, options: options, context: context)
        case .join:
            return try await prepareJoin(job, options: options, context: context)
        case .waiting:
            throw JobError(code: .internalError, message: "job \(job.id) was claimed while its parts run")
        }
    }
}
