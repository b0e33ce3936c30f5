import Foundation
import JobKinds
import JobctlCore
import Media
import Queue
import SafeHTTP

/// The body of `POST /v1/jobs`: the common fields, and each kind's own field (`"preset"`,
/// `"thumbnails"`…) kept as JSON for its kind to read. `Submission.request` checks it, as it
/// checks `jobctl submit`'s arguments.
struct SubmitRequest: Decodable, Sendable {
    var input: String
    var kind: String?
    var format: String?
    var range: RangeValue?
    var output: String?
    var priority: WholeNumber?
    var maxAttempts: WholeNumber?
    var metadata: [String: String]?
    var webhook: String?
    /// Each registered kind's field that the body has.
    var kindFields: [String: JSONValue] = [:]
    /// More outputs of the input, one webhook for all: `"also": ["thumbnails", {"kind":
    /// "waveform", "output": "…", "waveform": {…}}]`.
    var also: [AlsoValue]?
    /// `"auto"`, `"off"` or a segment length (`"30s"`): an export split across workers.
    var split: String?

    private enum CodingKeys: String, CodingKey {
        case input, kind, format, range, output, priority, maxAttempts, metadata, webhook, also, split
    }

    /// One of `also`: a kind's name, or an object with `kind`, `output`, `format` and the kind's
    /// field.
    struct AlsoValue: Decodable, Sendable {
        var draft: SubmissionDraft.AlsoDraft

        init(from decoder: any Decoder) throws {
            if let kind = try? decoder.singleValueContainer().decode(String.self) {
                draft = .init(kind: kind)
                return
            }
            let object = try decoder.container(keyedBy: KindField.self)
            let kind = try object.decode(String.self, forKey: KindField(stringValue: "kind"))
            draft = .init(
                kind: kind,
                output: try object.decodeIfPresent(String.self, forKey: KindField(stringValue: "output")),
                format: try object.decodeIfPresent(String.self, forKey: KindField(stringValue: "format"))
            )
            if let definition = JobKinds.named(JobKind(rawValue: kind)) {
                draft.field = try object.decodeIfPresent(
                    JSONValue.self,
                    forKey: KindField(stringValue: definition.field)
                )
            }
            let known = Set(["kind", "output", "format"] + JobKinds.all.map { $0.field })
            if let unknown = object.allKeys.map(\.stringValue).first(where: { !known.contains($0) }) {
                throw DecodingError.dataCorruptedError(
                    forKey: KindField(stringValue: unknown),
                    in: object,
                    debugDescription: "is not a field of an extra output (kind, output, format and the kind's field)"
                )
            }
        }
    }

    private struct KindField: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        input = try container.decode(String.self, forKey: .input)
        kind = try container.decodeIfPresent(String.self, forKey: .kind)
        format = try container.decodeIfPresent(String.self, forKey: .format)
        range = try container.decodeIfPresent(RangeValue.self, forKey: .range)
        output = try container.decode(String.self, forKey: .output)
        priority = try container.decodeIfPresent(WholeNumber.self, forKey: .priority)
        maxAttempts = try container.decodeIfPresent(WholeNumber.self, forKey: .maxAttempts)
        metadata = try container.decodeIfPresent([String: String].self, forKey: .metadata)
        webhook = try container.decodeIfPresent(String.self, forKey: .webhook)
        also = try container.decodeIfPresent([AlsoValue].self, forKey: .also)
        split = try container.decodeIfPresent(String.self, forKey: .split)
        let fields = try decoder.container(keyedBy: KindField.self)
        for definition in JobKinds.all {
            let key = KindField(stringValue: definition.field)
            if let value = try fields.decodeIfPresent(JSONValue.self, forKey: key), value != .null {
                kindFields[definition.field] = value
            }
        }
    }

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

    /// The draft `Submission.request` checks, as `jobctl submit` builds its own.
    var draft: SubmissionDraft {
        SubmissionDraft(
            kind: kind,
            input: input,
            output: output,
            format: format,
            range: range.map {
                switch $0 {
                case .text(let text): .text(text)
                case .seconds(let start, let duration): .seconds(start: start, duration: duration)
                }
            },
            priority: priority?.value,
            maxAttempts: maxAttempts?.value,
            metadata: metadata ?? [:],
            webhook: webhook,
            kindFields: kindFields,
            also: also?.map(\.draft) ?? [],
            split: split
        )
    }

    /// The job to queue for `owner`, or the first field that is wrong (422; 403 for what the
    /// key may not ask for).
    func jobRequest(
        owner: APIKey,
        idempotencyKey: String?,
        catalog: PresetCatalog,
        scope: PathConfinement,
        policy: AddressPolicy
    ) throws(APIError) -> JobRequest {
        var draft = self.draft
        draft.idempotencyKey = idempotencyKey
        let rules = SubmissionRules(
            place: .tenant(owner: owner.id, roots: scope),
            catalog: catalog,
            addressPolicy: policy,
            maxPriority: owner.scope == .admin ? 1000 : owner.maxPriority,
            mayAskCostlySettings: owner.scope == .admin,
            naming: .json
        )
        do {
            return try Submission.request(draft, rules: rules)
        } catch {
            // What the key may not ask for is 403; every other refusal of a field is 422.
            throw error.code == .forbidden
                ? APIError(.forbidden, error.message, field: error.field)
                : APIError.invalid(error.field, error.message, code: error.code)
        }
    }
}
