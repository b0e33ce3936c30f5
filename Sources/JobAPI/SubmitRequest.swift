import Foundation
import JobctlCore
import Media
import Queue
import SafeHTTP
import Submission

/// The body of `POST /v1/jobs`, checked field by field into a `JobRequest`.
struct SubmitRequest: Decodable, Sendable, Hashable {
    var input: String
    var kind: String?
    var preset: PresetValue?
    var format: String?
    var thumbnails: ThumbnailsBody?
    var storyboard: StoryboardBody?
    var waveform: WaveformBody?
    var range: RangeValue?
    var output: String
    var priority: WholeNumber?
    var maxAttempts: WholeNumber?
    var metadata: [String: String]?
    var webhook: String?

    /// `"1s+3s"` (the CLI's grammar) or `{"start": 1, "duration": 3}` in seconds.
    enum RangeValue: Decodable, Sendable, Hashable {
        case text(String)
        case seconds(start: Double, duration: Double?)

        init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self) {
                self = .text(text)
                return
            }
            struct Seconds: Decodable {
                var start: Double
                var duration: Double?
            }
            let value = try Seconds(from: decoder)
            self = .seconds(start: value.start, duration: value.duration)
        }
    }
}

/// An integer field of a request body. Foundation refuses 2.5 or 2^64 for an `Int` as "not
/// valid JSON", without naming the field; this names it (422 `invalid_request`).
struct WholeNumber: Decodable, Sendable, Hashable {
    var value: Int

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int.self) {
            self.value = value
            return
        }
        throw DecodingError.dataCorrupted(
            .init(codingPath: decoder.codingPath, debugDescription: "a whole number between -2^63 and 2^63-1")
        )
    }
}

extension SubmitRequest {
    /// The job to queue for `owner`, or the first field that is wrong.
    func jobRequest(
        owner: APIKey,
        idempotencyKey: String?,
        catalog: PresetCatalog,
        scope: PathConfinement,
        policy: AddressPolicy
    ) throws(APIError) -> JobRequest {
        // `noop` is `jobctl bench`'s, refused here as `jobctl submit` refuses it.
        guard let kind = JobKind(rawValue: self.kind ?? "export"), kind != .noop else {
            throw .invalid(
                "kind",
                "kind is export, thumbnails, storyboard or waveform, not '\((self.kind ?? "").prefix(20))'"
            )
        }
        // Local paths are relative to the key's own directory under each root; the row keeps
        // them so, and the checks below look at the files they name on this host.
        let localInput = try Self.checkLocation(
            input,
            field: "input",
            root: scope.inputRoot,
            owner: owner.id,
            policy: policy,
            code: .inputUnreadable
        )
        let localOutput = try Self.checkLocation(
            output,
            field: "output",
            root: scope.outputRoot,
            owner: owner.id,
            policy: policy,
            code: .outputForbidden
        )
        if let problem = Submission.outputProblem(output, kind: kind) { throw .invalid("output", problem) }
        let range = try range.map(Self.range)
        let timeRange = range.flatMap { TimeRange(seconds: $0.start, duration: $0.duration) }
        // The same recipe, checks and stored form as `jobctl submit` (the Submission module).
        let recipe = try recipe(kind, catalog: catalog)
        let plan: SubmissionPlan
        do throws(MediaError) {
            plan = try Submission.plan(recipe, input: localInput, output: localOutput, range: timeRange ?? .all)
            try Submission.checkLocalOutput(localOutput, input: localInput, kind: kind)
        } catch {
            if let option = error.option {
                let field = "\(kind.rawValue).\(option.field)"
                throw .invalid(field, "\(field) \(option.requirement)")
            }
            // A key sees its own relative paths in messages, not the host's layout.
            var message = error.message
            for root in [scope.inputRoot, scope.outputRoot].compactMap({ $0 }) {
                message = message.replacingOccurrences(
                    of: TenantPath.directory(root: root, owner: owner.id) + "/",
                    with: ""
                )
            }
            throw .invalid(Self.field(of: error, kind: kind), message, code: error.code.errorCode)
        }
        let maxAttempts = self.maxAttempts?.value ?? 3
        guard (1...100).contains(maxAttempts) else { throw .invalid("maxAttempts", "maxAttempts is between 1 and 100") }
        let priority = self.priority?.value ?? 0
        guard (-1000...1000).contains(priority) else {
            throw .invalid("priority", "priority is between -1000 and 1000")
        }
        // Running ahead of others, and encoder settings that cost many times the CPU, are the
        // operator's to grant (`keys create --max-priority`, an admin key, a presets file).
        guard owner.allows(priority: priority) else {
            throw APIError(
                .forbidden,
                "this key may submit at priority \(owner.maxPriority) at most (an admin can make a key with jobctl keys create --max-priority N)",
                field: "priority"
            )
        }
        if owner.scope != .admin, case .inline = preset, case .export(let chosen, _) = recipe,
            let speed = chosen.video?.encoderPreset, Preset.costlyEncoderSpeeds.contains(speed)
        {
            throw APIError(
                .forbidden,
                "encoderPreset '\(speed)' costs many times the CPU of 'medium': only admin keys may ask for it inline (an operator can offer it as a named preset)",
                field: "preset"
            )
        }
        let metadata = self.metadata ?? [:]
        if let problem = Submission.metadataProblem(metadata) { throw .invalid("metadata", problem) }
        if let webhook {
            guard let url = URL(string: webhook), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                url.host?.isEmpty == false
            else { throw .invalid("webhook", "webhook must be an http(s) URL") }
            if let refusal = policy.staticRefusal(for: webhook) {
                throw .invalid("webhook", "\(MediaLocation.displayed(webhook)): \(refusal)", code: .webhookForbidden)
            }
        }
        return JobRequest(
            kind: kind,
            input: input,
            output: output,
            preset: plan.preset,
            presetSettings: plan.settings,
            format: plan.format,
            range: range,
            priority: priority,
            maxAttempts: maxAttempts,
            idempotencyKey: idempotencyKey.map { "api:\(owner.id):\($0)" },
            metadata: metadata,
            webhook: webhook,
            owner: owner.id
        )
    }

    /// The request field a submission error is about.
    static func field(of error: MediaError, kind: JobKind) -> String {
        switch error.code {
        case .inputUnsupported: "input"
        case .outputForbidden, .outputUnwritable: "output"
        case .presetUnknown, .limitExceeded: kind == .export ? "preset" : kind.rawValue
        default: kind == .export ? "preset" : "input"
        }
    }

    static func range(_ value: RangeValue) throws(APIError) -> Job.Range {
        switch value {
        case .text(let text):
            do {
                let parsed = try TimeRange(parsing: text)
                return Job.Range(start: Double(parsed.start) / 1e6, duration: parsed.duration.map { Double($0) / 1e6 })
            } catch {
                throw .invalid("range", error.description, code: .rangeOutOfBounds)
            }
        case .seconds(let start, let duration):
            // What a worker can turn into microseconds: a duration of at least one (5e-324 once
            // passed a `> 0` check, and the worker trapped on the stored row).
            guard start < 1e9, (duration ?? 1) < 1e9, TimeRange(seconds: start, duration: duration) != nil else {
                throw .invalid(
                    "range",
                    "range.start is 0 or more and range.duration at least a microsecond (seconds, both under 10^9)",
                    code: .rangeOutOfBounds
                )
            }
            return Job.Range(start: start, duration: duration)
        }
    }

    /// A URL must be http(s) and not point at this network (the same guard as the CLI's); a
    /// local path is relative to `owner`'s own directory under `root` (`TenantPath`). Returns
    /// what the location names on this host: the URL, or the file in the key's directory.
    static func checkLocation(
        _ location: String,
        field: String,
        root: String?,
        owner: String,
        policy: AddressPolicy,
        code: ErrorCode
    ) throws(APIError) -> String {
        guard !location.isEmpty, location.utf8.count <= 4096, !location.contains("\0") else {
            throw .invalid(field, "\(field) is a path or an http(s) URL of at most 4096 bytes")
        }
        if location.contains("://") {
            let scheme = location.prefix { $0 != ":" }.lowercased()
            guard scheme == "http" || scheme == "https" else {
                throw .invalid(field, "\(field) is an http(s) URL or a path, not a \(scheme):// URL")
            }
            if let refusal = policy.staticRefusal(for: location) {
                throw .invalid(field, "\(MediaLocation.displayed(location)): \(refusal)", code: code)
            }
            return location
        }
        guard let root else {
            throw .invalid(
                field,
                "local paths are not accepted: this server was started without --\(field)-root; send an http(s) URL",
                code: code
            )
        }
        if let problem = TenantPath.problem(location) { throw .invalid(field, "\(field): \(problem)", code: code) }
        guard TenantPath.isDirectoryName(owner) else {
            throw .invalid(field, "this key cannot have local files", code: code)
        }
        let path = TenantPath.resolve(location, root: root, owner: owner)
        // What this server looks at (an input's tracks, an output's kind) stays in the key's
        // directory too: a link there that leads out is refused, not followed.
        let directory = OutputDestination.resolved(TenantPath.directory(root: root, owner: owner))
        let resolved = OutputDestination.resolved(path)
        guard resolved == directory || resolved.hasPrefix(directory + "/") else {
            throw .invalid(field, "\(field): \(location) leads outside this key's directory", code: code)
        }
        return path
    }
}
