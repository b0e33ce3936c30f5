import Foundation

/// A job's place in a graph (issue 27, typed by issue 43): data the queue stores in its own
/// `role` column and a job carries, not a key among a kind's options.
///
/// A parent fans out on its first attempt and joins on its last (`JobGraphStateMachine`); what
/// it fans out into is its `GraphPlan`. A child is one of a parent's children (its index is
/// `Job.childIndex`); its `part` is its share of the parent's work in the parent kind's own
/// terms (a split export's segment, a split ladder's chunk), or `nil` for a whole job of its
/// own (one output of a submission with `also`). The queue stores the payloads as JSON and
/// never reads them: the kind that made them does (`SplittableKind`).
public enum JobRole: Sendable, Hashable {
    /// Submitted by itself, run by itself.
    case standalone
    /// Fans out into children, then joins them.
    case parent(GraphPlan)
    /// One of a parent's children.
    case child(part: JSONValue?)

    /// What a parent fans out into.
    public enum GraphPlan: Sendable, Hashable {
        /// Its kind cuts its own work into parts: the kind's split request, in its terms
        /// (`"auto"`, `"30s"`). A kind may still decide, on its first attempt, to run whole.
        case split(JSONValue)
        /// Several outputs of one input: the job's own, then these (each as a job of its own:
        /// kind, preset, stored options, output, format).
        case outputs(JSONValue)
    }

    /// The split a parent asked for (`nil`: not a split parent).
    public var split: JSONValue? { if case .parent(.split(let request)) = self { request } else { nil } }

    /// A child's part (`nil`: not a child, or a child that is a whole job of its own).
    public var part: JSONValue? { if case .child(let part) = self { part } else { nil } }
}

// The stored and shown form: `null` for standalone, `{"parent": {"split": …}}`,
// `{"parent": {"outputs": […]}}`, `{"child": {"part": …}}` or `{"child": {}}`.
extension JobRole: Codable {
    private enum Key: String, CodingKey {
        case parent, child, split, outputs, part
    }

    /// Any key, to refuse the ones a role does not have (`allKeys` lists only known ones).
    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Refuses an object with keys other than `allowed`.
    private static func only(_ allowed: Set<String>, in decoder: any Decoder, at key: Key?) throws {
        let container = try decoder.container(keyedBy: AnyKey.self)
        let keys =
            try key.map {
                try container.nestedContainer(keyedBy: AnyKey.self, forKey: AnyKey(stringValue: $0.rawValue)).allKeys
            }
            ?? container.allKeys
        if let stray = keys.first(where: { !allowed.contains($0.stringValue) }) {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a role has no '\(stray.stringValue)'")
            )
        }
    }

    public init(from decoder: any Decoder) throws {
        if try decoder.singleValueContainer().decodeNil() {
            self = .standalone
            return
        }
        try Self.only(["parent", "child"], in: decoder, at: nil)
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count == 1 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "a role is one of parent or child")
            )
        }
        if container.contains(.parent) {
            try Self.only(["split", "outputs"], in: decoder, at: .parent)
            let plan = try container.nestedContainer(keyedBy: Key.self, forKey: .parent)
            switch (try plan.decodeIfPresent(JSONValue.self, forKey: .split), plan.allKeys.count) {
            case (let request?, 1): self = .parent(.split(request))
            case (nil, 1): self = .parent(.outputs(try plan.decode(JSONValue.self, forKey: .outputs)))
            default:
                throw DecodingError.dataCorrupted(
                    .init(codingPath: plan.codingPath, debugDescription: "a parent's plan is one of split or outputs")
                )
            }
        } else {
            try Self.only(["part"], in: decoder, at: .child)
            let child = try container.nestedContainer(keyedBy: Key.self, forKey: .child)
            let part = try child.decodeIfPresent(JSONValue.self, forKey: .part)
            self = .child(part: part == .null ? nil : part)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .standalone:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .parent(let plan):
            var container = encoder.container(keyedBy: Key.self)
            var nested = container.nestedContainer(keyedBy: Key.self, forKey: .parent)
            switch plan {
            case .split(let request): try nested.encode(request, forKey: .split)
            case .outputs(let outputs): try nested.encode(outputs, forKey: .outputs)
            }
        case .child(let part):
            var container = encoder.container(keyedBy: Key.self)
            var nested = container.nestedContainer(keyedBy: Key.self, forKey: .child)
            try nested.encodeIfPresent(part, forKey: .part)
        }
    }
}

extension JobRole {
    /// The `role` column's text (`nil`: standalone, a NULL).
    public func stored() throws -> String? {
        self == .standalone ? nil : try StoredJSON.encode(self)
    }

    /// The role a `role` column holds; text that is not a role is a damaged row.
    public init(stored text: String?, row: @autoclosure () -> String) throws {
        guard let text else {
            self = .standalone
            return
        }
        do {
            self = try JSONDecoder().decode(JobRole.self, from: Data(text.utf8))
        } catch {
            throw JobStoreError(
                .databaseCorrupt,
                "\(row()) has a role that cannot be read (\(error)); the row was changed outside jobctl"
            )
        }
    }
}
