import Foundation
import JobKinds
import JobctlCore
import Media
import Queue
import Testing

/// `also` (issue 27): one submission, several outputs, each checked as a submission of its own
/// and kept with the job for its fan-out.
@Suite("Submissions with more outputs (also)")
struct AlsoSubmissionTests {
    typealias Rules = SubmissionTests

    @Test("each extra output is checked as its own submission and stored with the job")
    func stored() throws {
        var draft = SubmissionDraft(
            input: "https://media.example/in.mov",
            output: "/srv/out/talk.mp4",
            range: .text("1s+3s"),
            kindFields: ["preset": .string("low")]
        )
        draft.also = [
            .init(kind: "thumbnails", field: .object(["at": .string("50%")])),
            .init(kind: "waveform", output: "/srv/out/peaks"),
        ]
        let request = try Submission.request(draft, rules: try Rules.rules(.flags))
        guard case .parent(.outputs(let plan)) = request.role else {
            Issue.record("a submission with also is not a parent with outputs: \(request.role)")
            return
        }
        let also = try plan.decoded(as: [AlsoOutput].self)
        #expect(also.map(\.kind) == [.thumbnails, .waveform])
        #expect(also.map(\.output) == ["/srv/out/talk.thumbnails", "/srv/out/peaks"], "beside the job's output")
        let thumbnails = try also[0].settings.decoded(as: ThumbnailOptions.self)
        #expect(thumbnails.times.count == 1)
        #expect(request.presetSettings["name"]?.stringValue == "low", "the job's own options are still there")
        #expect(request.presetSettings["also"] == nil, "the graph is the job's role, not one of its options")
    }

    @Test("a refusal names the extra output: also[N].field in the API, --also KIND on the command line")
    func refusals() throws {
        var draft = SubmissionDraft(
            input: "https://media.example/in.mov",
            output: "out/talk.mp4",
            kindFields: ["preset": .string("low")]
        )
        draft.also = [.init(kind: "waveform", field: .object(["pixelsPerSecond": .number(0)]))]
        let api = try #require(Rules.refusal(draft, try Rules.rules(.json)))
        #expect(api.field == "also[0].waveform.pixelsPerSecond" && api.message.hasPrefix("also[0]: "), "\(api)")
        let cli = try #require(Rules.refusal(draft, try Rules.rules(.flags)))
        #expect(cli.message.hasPrefix("--also waveform: "), "\(cli)")

        draft.also = [.init(kind: "gif")]
        #expect(Rules.refusal(draft, try Rules.rules(.json))?.field == "also[0].kind")
        draft.also = [.init(kind: "waveform", output: "out/talk.mp4")]
        #expect(Rules.refusal(draft, try Rules.rules(.json))?.field == "also[0].output", "the job's own output")
        draft.also = Array(repeating: .init(kind: "waveform"), count: Submission.maximumAlso + 1)
        #expect(Rules.refusal(draft, try Rules.rules(.json))?.field == "also")
        // An API key's extra output to a URL must be named: nothing to put it beside.
        var remote = SubmissionDraft(
            input: "https://media.example/in.mov",
            output: "https://bucket.example/talk.mp4",
            kindFields: ["preset": .string("low")]
        )
        remote.also = [.init(kind: "thumbnails")]
        #expect(Rules.refusal(remote, try Rules.rules(.json, tenant: true))?.field == "also[0].output")
    }
}

/// `split` (issue 27): checked at submit, kept with the export for its first attempt.
@Suite("Submissions of split exports")
struct SplitSubmissionTests {
    typealias Rules = SubmissionTests

    static func draft(_ split: String, kind: String? = nil, preset: String = "low") -> SubmissionDraft {
        var draft = SubmissionDraft(
            kind: kind,
            input: "https://media.example/in.mov",
            output: "/srv/out/talk.mp4",
            kindFields: kind == nil ? ["preset": .string(preset)] : [:]
        )
        draft.split = split
        return draft
    }

    @Test("a segment length or auto is stored in the export's role; off stores nothing")
    func stored() throws {
        let request = try Submission.request(Self.draft("30s"), rules: try Rules.rules(.json))
        #expect(request.role == .parent(.split(.string("30s"))))
        #expect(request.presetSettings["split"] == nil, "the split is the job's role, not one of its options")
        let auto = try Submission.request(Self.draft("AUTO"), rules: try Rules.rules(.flags))
        #expect(auto.role == .parent(.split(.string("auto"))))
        let off = try Submission.request(Self.draft("off"), rules: try Rules.rules(.json))
        #expect(off.role == .standalone)
        // The stored preset still reads as the preset.
        #expect(try request.presetSettings.decoded(as: Preset.self).name == "low")
    }

    @Test("refused: a length under 1 s, a word, another kind, a preset that copies the video")
    func refusals() throws {
        for text in ["500ms", "3s", "soon", "-3s"] {
            let error = Rules.refusal(Self.draft(text), try Rules.rules(.json))
            #expect(error?.field == "split" && error?.code == .invalidRequest, "\(text): \(String(describing: error))")
        }
        #expect(Rules.refusal(Self.draft("30s", kind: "thumbnails"), try Rules.rules(.json))?.field == "split")
        let copy = Rules.refusal(Self.draft("30s", preset: "passthrough"), try Rules.rules(.json))
        #expect(
            copy?.field == "split" && copy?.message.contains("encodes video") == true,
            "\(String(describing: copy))"
        )
        let cli = Rules.refusal(Self.draft("soon"), try Rules.rules(.flags))
        #expect(cli?.message.hasPrefix("--split ") == true, "\(String(describing: cli))")
    }
}
