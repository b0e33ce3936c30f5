import Foundation
import JobctlCore
import Media
import ObjectStorage
import Queue
import SafeHTTP

extension Submission {
    /// The one path from a draft to a job: `jobctl submit` and `POST /v1/jobs` both call it, so
    /// every rule lives here once. The cheap refusals come first (the kind, the locations and
    /// the address guard, the webhook, the range, the numbers, the kind's options), the look at
    /// a local input's tracks last. A refusal names the field (`SubmissionError`).
    public static func request(_ draft: SubmissionDraft, rules: SubmissionRules) throws(SubmissionError) -> JobRequest {
        // The kind, and no field of another kind.
        let name = draft.kind ?? JobKind.export.rawValue
        guard let definition = JobKinds.named(JobKind(rawValue: name)) else {
            throw rules.invalid("kind", "is \(JobKinds.names), not '\(name.prefix(20))'")
        }
        for field in draft.kindFields.keys.sorted() where field != definition.field {
            let owner = JobKinds.all.first { $0.field == field }
            throw rules.invalid(field, "is for kind \(owner?.kind.rawValue ?? "?"), not \(definition.kind)")
        }

        // Where from and where to, by their text and the address guard: nothing resolved yet.
        let input = try location(draft.input, field: "input", code: .inputUnreadable, rules: rules)
        var output: (stored: String, local: String)?
        if let given = draft.output {
            output = try location(given, field: "output", code: .outputForbidden, rules: rules)
        }
        if output == nil, case .tenant = rules.place { throw rules.invalid("output", "is required") }
        if let output,
            let problem = outputProblem(output.stored, kind: definition.kind, name: rules.name("output"))
        {
            throw SubmissionError(code: .invalidRequest, field: "output", message: problem)
        }
        if let webhook = draft.webhook { try checkWebhook(webhook, rules: rules) }

        // The numbers.
        let range = try range(draft.range, rules: rules)
        let maxAttempts = draft.maxAttempts ?? 3
        guard (1...100).contains(maxAttempts) else { throw rules.invalid("maxAttempts", "is between 1 and 100") }
        let priority = draft.priority ?? 0
        guard (-1000...1000).contains(priority) else { throw rules.invalid("priority", "is between -1000 and 1000") }
        // Running ahead of others is the operator's to grant (`keys create --max-priority`).
        guard priority <= rules.maxPriority else {
            throw SubmissionError(
                code: .forbidden,
                field: "priority",
                message:
                    "this key may submit at priority \(rules.maxPriority) at most (an admin can make a key with jobctl keys create --max-priority N)"
            )
        }
        if let problem = metadataProblem(draft.metadata) {
            // The problem names the field as the API does ("metadata is at most …").
            throw SubmissionError(
                code: .invalidRequest,
                field: "metadata",
                message: rules.name("metadata") + problem.dropFirst("metadata".count)
            )
        }
        if let key = draft.idempotencyKey, key.isEmpty || key.utf8.count > 255 {
            throw rules.invalid("idempotencyKey", "is 1 to 255 bytes")
        }

        // The kind's own options, then what a local input says about them (the only step
        // that may read a file).
        let plan = try definition.plan(
            field: draft.kindFields[definition.field],
            format: draft.format,
            rules: rules,
            input: LocalInput(location: input.local, range: range.time),
            output: output?.local
        )
        if output == nil { output = (plan.defaultOutput, plan.defaultOutput) }
        guard let output else { throw rules.invalid("output", "is required") }
        do throws(MediaError) {
            try checkLocalOutput(output.local, input: input.local, writesFileSet: definition.writesFileSet)
        } catch {
            throw refusal(error, of: definition, rules: rules)
        }
        var idempotencyKey = draft.idempotencyKey
        var owner: String?
        if case .tenant(let key, _) = rules.place {
            owner = key
            idempotencyKey = idempotencyKey.map { "api:\(key):\($0)" }
        }
        var request = JobRequest(
            kind: definition.kind,
            input: input.stored,
            output: output.stored,
            preset: plan.preset,
            presetSettings: plan.settings,
            format: plan.format,
            range: range.stored,
            priority: priority,
            maxAttempts: maxAttempts,
            idempotencyKey: idempotencyKey,
            metadata: draft.metadata,
            webhook: draft.webhook,
            owner: owner
        )
        if let split = draft.split { try attach(split: split, to: &request, rules: rules) }
        if !draft.also.isEmpty { try attach(draft.also, to: &request, draft: draft, rules: rules) }
        return request
    }

    /// `split` checked, by its syntax then by the kind (`SplittableKind.check`), and kept in the
    /// job's role (a parent with a split plan); `off` keeps nothing.
    static func attach(split text: String, to request: inout JobRequest, rules: SubmissionRules) throws(SubmissionError)
    {
        let split: SplitRequest
        do throws(MediaError) {
            split = try SplitRequest(parsing: text)
        } catch {
            throw rules.invalid(
                "split",
                "is auto, off or a segment length of at least 4 s (60s, 1:00), not '\(text.prefix(40))'"
            )
        }
        guard let kind = JobKinds.splittable(request.kind) else {
            throw rules.invalid("split", "is for exports and hls ladders, not \(request.kind)")
        }
        if split == .off { return }
        try kind.check(split, for: request, rules: rules)
        request.role = .parent(.split(.string(split.description)))
    }

    /// The most outputs one submission may ask for with `also`.
    public static let maximumAlso = 8

    /// `also`'s outputs checked as submissions of their own (same input, range and numbers)
    /// and kept in the job's role (a parent with outputs): its first attempt fans out into its own output
    /// and each of these (`Job.alsoStep`).
    static func attach(
        _ also: [SubmissionDraft.AlsoDraft],
        to request: inout JobRequest,
        draft: SubmissionDraft,
        rules: SubmissionRules
    ) throws(SubmissionError) {
        guard also.count <= maximumAlso else { throw rules.invalid("also", "names at most \(maximumAlso) outputs") }
        // One level of graph: a split export's parent is not also the parent of other outputs
        // (decision 109).
        guard request.role == .standalone else {
            throw rules.invalid(
                "also",
                "cannot go with split yet: submit the split export and the other outputs as jobs of their own"
            )
        }
        var outputs: [AlsoOutput] = []
        var taken: Set<String> = [request.output]
        for (index, extra) in also.enumerated() {
            let field = "also[\(index)]"
            let name: String
            switch rules.naming {
            case .json: name = field
            case .flags: name = "--also \(extra.kind.prefix(20))"
            }
            var child = draft
            (child.kind, child.output, child.format, child.also) = (extra.kind, extra.output, extra.format, [])
            child.kindFields = [:]
            child.split = nil
            child.webhook = nil
            child.idempotencyKey = nil
            if let definition = JobKinds.named(JobKind(rawValue: extra.kind)), let field = extra.field {
                child.kindFields[definition.field] = field
            }
            if child.output == nil, !MediaLocation.isRemote(draft.output ?? "") {
                // Beside the job's own output: `talk.720p.mp4` → `talk.720p.thumbnails/`.
                let base = (draft.output ?? "") as NSString
                child.output = draft.output.map { _ in base.deletingPathExtension + "." + extra.kind }
            }
            let checked: JobRequest
            do throws(SubmissionError) {
                checked = try Submission.request(child, rules: rules)
            } catch {
                var error = error
                error.field = "\(field).\(error.field)"
                error.message = "\(name): \(error.message)"
                throw error
            }
            guard taken.insert(checked.output).inserted else {
                throw SubmissionError(
                    code: .invalidRequest,
                    field: "\(field).output",
                    message:
                        "\(name): its output \(MediaLocation.displayed(checked.output)) is another output of this job; give each its own"
                )
            }
            outputs.append(
                AlsoOutput(
                    kind: checked.kind,
                    preset: checked.preset,
                    settings: checked.presetSettings,
                    output: checked.output,
                    format: checked.format
                )
            )
        }
        do {
            request.role = .parent(.outputs(try JSONValue(encoding: outputs)))
        } catch {
            throw rules.invalid("also", "cannot be stored: \(error)")
        }
    }

    /// The range as the row stores it (seconds, exact for every microsecond: decision #96)
    /// and as the kind's checks take it.
    static func range(
        _ draft: SubmissionDraft.RangeDraft?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> (
        stored: Job.Range?, time: TimeRange
    ) {
        switch draft {
        case nil:
            return (nil, .all)
        case .text(let text):
            do {
                let parsed = try TimeRange(parsing: text)
                let stored = Job.Range(
                    start: Double(parsed.start) / 1e6,
                    duration: parsed.duration.map { Double($0) / 1e6 }
                )
                return (stored, parsed)
            } catch {
                throw SubmissionError(code: .rangeOutOfBounds, field: "range", message: error.description)
            }
        case .seconds(let start, let duration):
            // What a worker can turn into microseconds: a duration of at least one (5e-324 once
            // passed a `> 0` check, and the worker trapped on the stored row).
            guard start < 1e9, (duration ?? 1) < 1e9, let time = TimeRange(seconds: start, duration: duration) else {
                throw SubmissionError(
                    code: .rangeOutOfBounds,
                    field: "range",
                    message:
                        "range.start is 0 or more and range.duration at least a microsecond (seconds, both under 10^9)"
                )
            }
            return (Job.Range(start: start, duration: duration), time)
        }
    }

    /// A refusal from a kind's look at the input or the output, naming the field it is about;
    /// an API key sees its own relative paths in it, not the host's layout.
    static func refusal(
        _ error: MediaError,
        of definition: any JobKindDefinition.Type,
        rules: SubmissionRules
    ) -> SubmissionError {
        var message = error.message
        if case .tenant(let owner, let roots) = rules.place {
            for root in [roots.inputRoot, roots.outputRoot].compactMap({ $0 }) {
                message = message.replacingOccurrences(
                    of: TenantPath.directory(root: root, owner: owner) + "/",
                    with: ""
                )
            }
        }
        let field =
            switch error.code {
            case .inputUnsupported: "input"
            case .outputForbidden, .outputUnwritable: "output"
            case .presetUnknown, .presetIncompatible, .limitExceeded, .invalidRequest: definition.field
            default: "input"
            }
        return SubmissionError(code: error.code, field: field, message: message, foundInMedia: true)
    }
}

extension JobKindDefinition {
    /// The kind's field through its options and its plan: what `Submission.request` asks of a
    /// kind.
    static func plan(
        field value: JSONValue?,
        format: String?,
        rules: SubmissionRules,
        input: LocalInput,
        output: String?
    ) throws(SubmissionError) -> SubmissionPlan {
        let options = try self.options(field: value, format: format, rules: rules)
        do {
            return try plan(options, format: format, input: input, output: output)
        } catch {
            throw Submission.refusal(error, of: self, rules: rules)
        }
    }
}
