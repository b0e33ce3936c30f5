import Foundation
import JobKinds
import JobctlCore
import Media
import Queue
import SafeHTTP
import Testing

/// The kind registry and the one submission path (`Submission.request`) that `jobctl submit`
/// and `POST /v1/jobs` share.
@Suite("Job kinds: the registry and the one submission path")
struct SubmissionTests {
    static func rules(_ naming: FieldNaming, tenant: Bool = false, objectRoot: String? = nil) throws -> SubmissionRules
    {
        SubmissionRules(
            place: tenant
                ? .tenant(owner: "abc123", roots: PathConfinement(objectRoot: objectRoot))
                : .host(currentDirectory: "/srv/media"),
            catalog: try PresetCatalog(customFile: nil),
            addressPolicy: AddressPolicy(),
            naming: naming
        )
    }

    static func refusal(_ draft: SubmissionDraft, _ rules: SubmissionRules) -> SubmissionError? {
        do {
            _ = try Submission.request(draft, rules: rules)
            return nil
        } catch {
            return error
        }
    }

    @Test("every kind is registered once, under a name and a field of its own; noop is not one")
    func registry() {
        let names = JobKinds.all.map { $0.kind.rawValue }
        let fields = JobKinds.all.map { $0.field }
        #expect(names == ["export", "thumbnails", "storyboard", "waveform", "hls"])
        #expect(Set(names).count == names.count && Set(fields).count == fields.count)
        #expect(JobKinds.named(.noop) == nil && JobKinds.named("dash") == nil)
        for definition in JobKinds.all { #expect(JobKinds.named(definition.kind) == definition) }
        #expect(JobKinds.names == "export, thumbnails, storyboard, waveform or hls")
    }

    /// A kind's request fields, read from the type itself: decoded from `{}` (every field is
    /// optional) and listed by reflection. `nil` for a request that is not an object (a preset).
    static func requestFields<Kind: JobKindDefinition>(_ kind: Kind.Type) -> Set<String>? {
        guard let empty = try? JSONValue.object([:]).decoded(as: Kind.Request.self),
            Mirror(reflecting: empty).displayStyle == .struct
        else { return nil }
        return Set(Mirror(reflecting: empty).children.compactMap(\.label))
    }

    @Test("openapi.json's submit body has each kind's field, with exactly the fields of the kind's Request")
    func openAPIMatchesRequests() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Sources/JobAPI/openapi.json"
        )
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let submit = try #require(schemas["SubmitRequest"] as? [String: Any])
        let properties = try #require(submit["properties"] as? [String: Any])
        let kinds = try #require((properties["kind"] as? [String: Any])?["enum"] as? [Any])
        #expect(kinds.compactMap { $0 as? String } == JobKinds.all.map { $0.kind.rawValue })
        for definition in JobKinds.all {
            let field = try #require(properties[definition.field], "openapi.json lacks \(definition.field)")
            guard let fields = Self.requestFields(definition) else { continue }
            // The schema the field refers to.
            let text = (String(data: try JSONSerialization.data(withJSONObject: field), encoding: .utf8) ?? "")
                .replacingOccurrences(of: "\\/", with: "/")
            let name = try #require(
                text.range(of: "#/components/schemas/[A-Za-z]+", options: .regularExpression).map {
                    String(text[$0].split(separator: "/").last ?? "")
                }
            )
            let schema = try #require(schemas[name] as? [String: Any])
            let documented = Set((schema["properties"] as? [String: Any] ?? [:]).keys)
            #expect(
                documented == fields,
                "\(definition.kind): openapi.json \(name) has \(documented.sorted()), the Request \(fields.sorted())"
            )
        }
    }

    @Test("one rule, two front ends: the same code and field, the field named as each names it")
    func sameRuleBothFrontEnds() throws {
        let cases: [(SubmissionDraft, ErrorCode, String, cli: String, api: String)] = [
            (
                SubmissionDraft(input: "/a.mov", maxAttempts: 0, kindFields: ["preset": .string("low")]),
                .invalidRequest,
                "maxAttempts", "--max-attempts is between 1 and 100", "maxAttempts is between 1 and 100"
            ),
            (
                SubmissionDraft(input: "/a.mov", priority: 5000, kindFields: ["preset": .string("low")]),
                .invalidRequest,
                "priority", "--priority is between", "priority is between"
            ),
            (
                SubmissionDraft(kind: "dash", input: "/a.mov"), .invalidRequest, "kind", "--kind is export,",
                "kind is export,"
            ),
            (
                SubmissionDraft(
                    kind: "thumbnails",
                    input: "/a.mov",
                    kindFields: ["thumbnails": .object(["count": .number(0)])]
                ),
                .invalidRequest, "thumbnails.count", "--count is between 1 and 1000",
                "thumbnails.count is between 1 and 1000"
            ),
            (
                SubmissionDraft(
                    kind: "thumbnails",
                    input: "/a.mov",
                    kindFields: ["thumbnails": .object(["count": .number(2.5)])]
                ),
                .invalidRequest, "thumbnails.count", "--count is not valid", "thumbnails.count is not valid"
            ),
            (
                SubmissionDraft(kind: "waveform", input: "/a.mov", kindFields: ["preset": .string("low")]),
                .invalidRequest,
                "preset", "--preset is for kind export, not waveform", "preset is for kind export, not waveform"
            ),
            (
                SubmissionDraft(input: "/a.mov", kindFields: ["preset": .string("nonesuch")]), .presetUnknown, "preset",
                "", ""
            ),
            (
                SubmissionDraft(input: "/a.mov", range: .text("5s-1s"), kindFields: ["preset": .string("low")]),
                .rangeOutOfBounds,
                "range", "", ""
            ),
            (
                SubmissionDraft(
                    input: "/a.mov",
                    webhook: "http://10.0.0.1/hook",
                    kindFields: ["preset": .string("low")]
                ),
                .webhookForbidden, "webhook", "--allow-private-webhooks lifts this", "10.0.0.1"
            ),
        ]
        for (draft, code, field, cli, api) in cases {
            for (naming, expected) in [(FieldNaming.flags, cli), (.json, api)] {
                let error = try #require(Self.refusal(draft, try Self.rules(naming)), "\(draft) was accepted")
                #expect(error.code == code && error.field == field, "\(naming): \(error)")
                #expect(
                    error.message.hasPrefix(expected) || error.message.contains(expected),
                    "\(naming): \(error.message)"
                )
            }
        }
    }

    @Test("a request given as --options JSON is named by its path there on the command line")
    func optionsPaths() throws {
        let cases: [(JSONValue, String, cli: String)] = [
            (.object(["at": .array([.number(1)])]), "thumbnails.at.0", "--options' at.0 has the wrong type"),
            (.number(5), "thumbnails", "--options has the wrong type"),
            (.object(["count": .number(0)]), "thumbnails.count", "--count is between 1 and"),
        ]
        for (value, field, cli) in cases {
            let draft = SubmissionDraft(kind: "thumbnails", input: "/a.mov", kindFields: ["thumbnails": value])
            let error = try #require(Self.refusal(draft, try Self.rules(.flags)))
            #expect(error.field == field && error.message.hasPrefix(cli), "\(error)")
        }
    }

    @Test("the cheap refusals come first: an address or a number is refused before the kind's options")
    func cheapRefusalsFirst() throws {
        var draft = SubmissionDraft(
            kind: "waveform",
            input: "/a.mov",
            webhook: "http://127.0.0.1/hook",
            kindFields: ["waveform": .object(["bits": .number(7)])]
        )
        #expect(Self.refusal(draft, try Self.rules(.json))?.field == "webhook")
        draft.webhook = nil
        draft.maxAttempts = 1000
        #expect(Self.refusal(draft, try Self.rules(.json))?.field == "maxAttempts")
        draft.maxAttempts = nil
        #expect(Self.refusal(draft, try Self.rules(.json))?.field == "waveform.bits")
    }

    @Test("s3:// locations: the host's jobs may use them, an API key's may not; a malformed one says why")
    func objectStoreLocations() throws {
        var draft = SubmissionDraft(
            kind: "export",
            input: "s3://media-in/talks/talk one.mov",
            output: "s3://media-out/talks/talk one.mp4",
            kindFields: ["preset": .string("low")]
        )
        let request = try Submission.request(draft, rules: try Self.rules(.flags))
        #expect(
            request.input == "s3://media-in/talks/talk one.mov" && request.output == "s3://media-out/talks/talk one.mp4"
        )
        let tenant = Self.refusal(draft, try Self.rules(.json, tenant: true))
        #expect(tenant?.field == "input" && tenant?.message.contains("s3://") == true, "\(tenant as Any)")
        draft.output = "s3://Media/out.mp4"
        let malformed = Self.refusal(draft, try Self.rules(.flags))
        #expect(malformed?.field == "output" && malformed?.message.contains("lowercase") == true, "\(malformed as Any)")
        draft.output = "s3://media-out/thumbs/"
        draft.kind = "thumbnails"
        draft.kindFields = ["thumbnails": .object(["at": .string("1s")])]
        let fileSet = Self.refusal(draft, try Self.rules(.flags))
        #expect(fileSet?.field == "output" && fileSet?.message.contains("{name}") == true, "\(fileSet as Any)")
        draft.output = "s3://media-out/thumbs/{name}"
        #expect(try Submission.request(draft, rules: try Self.rules(.flags)).output == "s3://media-out/thumbs/{name}")
    }

    @Test("an API key's s3:// locations: only under its own prefix of --s3-root, whatever the spelling")
    func tenantObjectPrefixes() throws {
        let rules = try Self.rules(.json, tenant: true, objectRoot: "s3://media/tenants/")
        func draft(_ input: String, _ output: String) -> SubmissionDraft {
            SubmissionDraft(kind: "export", input: input, output: output, kindFields: ["preset": .string("low")])
        }
        let own = "s3://media/tenants/abc123/"
        let request = try Submission.request(draft(own + "in/talk.mov", own + "out/talk.mp4"), rules: rules)
        #expect(request.input == own + "in/talk.mov" && request.output == own + "out/talk.mp4")
        let refused = [
            "s3://media/tenants/abc1234/in.mov",  // another key whose id starts with this one's
            "s3://media/tenants/other/in.mov",
            "s3://media/tenants/abc123",  // the prefix itself, no key under it
            "s3://media/tenants/abc123/",
            "s3://media/tenants/abc123/../other/in.mov",
            "s3://media/tenants/abc123/./in.mov",
            "s3://other-bucket/tenants/abc123/in.mov",
            "s3://media/TENANTS/abc123/in.mov",
            "s3://media/tenants//abc123/in.mov",
        ]
        for input in refused {
            let refusal = Self.refusal(draft(input, own + "out.mp4"), rules)
            #expect(refusal?.field == "input", "\(input) was accepted")
        }
        let outside = Self.refusal(draft(own + "in.mov", "s3://media/tenants/other/out.mp4"), rules)
        #expect(outside?.field == "output" && outside?.message.contains(own) == true, "\(outside as Any)")
        // Compared as bytes: a Kelvin sign is not a K (String comparison says it is).
        let kelvin = try Self.rules(.json, tenant: true, objectRoot: "s3://media/K/")
        let lookalike = Self.refusal(draft("s3://media/\u{212A}/abc123/in.mov", own + "o.mp4"), kelvin)
        #expect(lookalike?.field == "input", "a Kelvin sign passed for K")
        #expect(Self.refusal(draft("s3://media/K/abc123/in.mov", "s3://media/K/abc123/o.mp4"), kelvin) == nil)
        // Without a root, none at all.
        let none = Self.refusal(draft(own + "in.mov", own + "out.mp4"), try Self.rules(.json, tenant: true))
        #expect(none?.message.contains("--s3-root") == true, "\(none as Any)")
    }

    @Test("the command line's draft and the API's give the same job row for the same request")
    func sameRowBothFrontEnds() throws {
        let draft = SubmissionDraft(
            kind: "thumbnails",
            input: "https://media.example/in.mov",
            output: "https://bucket.example/out/{name}",
            format: "png",
            range: .text("1s+3s"),
            kindFields: [
                "thumbnails": .object(["at": .string("1s,50%"), "size": .string("320x"), "exact": .bool(true)])
            ]
        )
        let cli = try Submission.request(draft, rules: try Self.rules(.flags))
        let api = try Submission.request(draft, rules: try Self.rules(.json, tenant: true))
        #expect(cli.presetSettings == api.presetSettings && cli.range == api.range && cli.kind == .thumbnails)
        #expect(cli.owner == nil && api.owner == "abc123")
        let options = try cli.presetSettings.decoded(as: ThumbnailOptions.self)
        #expect(
            options.isExact && options.format == .png && options.maximumSize?.width == 320 && options.times.count == 2
        )
    }

    @Test("an API key's job: an output is required and local paths need the root")
    func tenantPlace() throws {
        let rules = try Self.rules(.json, tenant: true)
        let noOutput = SubmissionDraft(input: "https://media.example/in.mov", kindFields: ["preset": .string("low")])
        #expect(Self.refusal(noOutput, rules)?.field == "output")
        let local = SubmissionDraft(input: "in.mov", output: "out.mp4", kindFields: ["preset": .string("low")])
        let error = Self.refusal(local, rules)
        #expect(error?.field == "input" && error?.code == .inputUnreadable)
    }

    @Test("a costly inline preset is the operator's to grant: forbidden for a key that may not ask")
    func costlyInline() throws {
        var rules = try Self.rules(.json)
        rules.mayAskCostlySettings = false
        let inline: JSONValue = .object([
            "name": .string("slow"), "format": .string("mp4"),
            "video": .object(["codec": .string("h264"), "encoderPreset": .string("veryslow"), "crf": .number(23)]),
        ])
        let draft = SubmissionDraft(input: "/a.mov", kindFields: ["preset": inline])
        let error = Self.refusal(draft, rules)
        #expect(error?.code == .forbidden && error?.field == "preset", "\(String(describing: error))")
        rules.mayAskCostlySettings = true
        #expect(Self.refusal(draft, rules) == nil)
    }
}
