import Foundation
import Streaming

/// A ladder of a presets file (`--ladder NAME`): its own rungs instead of a built-in table's.
///
/// In the presets file it is an entry with a `ladder` key:
/// `{"name": "mobile", "summary": "…", "codec": "h264", "ladder": [{"name": "360p",
/// "short_side": 360, "bitrate": 800000}, …]}`. A rung's name becomes the name of its files
/// (`360p-init.mp4`, `360p.m3u8`), so it is lowercase letters, digits, `-` and `_`, and never
/// `audio` or `master` (the ladder's own files).
public struct NamedLadder: Sendable, Hashable, Codable {
    public var name: String
    public var summary: String?
    public var codec: Ladder.Codec
    public var rungs: [Ladder.Rung]

    enum CodingKeys: String, CodingKey {
        case name, summary, codec
        case rungs = "ladder"
    }

    public init(name: String, summary: String? = nil, codec: Ladder.Codec = .h264, rungs: [Ladder.Rung]) {
        self.name = name
        self.summary = summary
        self.codec = codec
        self.rungs = rungs
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            name: try container.decode(String.self, forKey: .name),
            summary: try container.decodeIfPresent(String.self, forKey: .summary),
            codec: try container.decodeIfPresent(Ladder.Codec.self, forKey: .codec) ?? .h264,
            rungs: try container.decode([Ladder.Rung].self, forKey: .rungs)
        )
    }

    /// The keys an entry may have, and a rung's.
    static let keys: Set<String> = ["name", "summary", "codec", "ladder"]
    static let rungKeys: Set<String> = ["name", "short_side", "bitrate", "at_most_30fps"]

    /// Why this ladder cannot be used, or `nil`.
    public var validationProblem: String? {
        guard Self.isFileName(name), name != "auto" else {
            return "a ladder's name is 1 to 32 lowercase letters, digits, - and _, and not auto"
        }
        if Ladder.Codec.allCases.contains(where: { codec in Ladder.table(codec).contains { $0.name == name } }) {
            return "'\(name)' is a rung's name; a ladder's name must differ from every rung's"
        }
        guard (1...12).contains(rungs.count) else { return "'ladder' has 1 to 12 rungs, not \(rungs.count)" }
        var seen = Set<String>()
        for rung in rungs {
            guard Self.isFileName(rung.name), !["audio", "master"].contains(rung.name), !rung.name.hasSuffix("-iframes")
            else {
                return
                    "rung '\(rung.name)': a rung's name is 1 to 32 lowercase letters, digits, - and _, not audio or master, and not ending in -iframes (it names the rung's files)"
            }
            guard seen.insert(rung.name).inserted else { return "rung '\(rung.name)' appears twice" }
            guard (16...4320).contains(rung.shortSide), rung.shortSide % 2 == 0 else {
                return "rung '\(rung.name)': short_side is an even number between 16 and 4320, not \(rung.shortSide)"
            }
            guard (16_000...200_000_000).contains(rung.bitRate) else {
                return
                    "rung '\(rung.name)': bitrate is between 16000 and 200000000 bits per second, not \(rung.bitRate)"
            }
        }
        return nil
    }

    static func isFileName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, (1...32).contains(text.unicodeScalars.count) else { return false }
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789-_")
        return CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789").contains(first)
            && text.unicodeScalars.allSatisfy { allowed.contains($0) }
    }

    /// The ladder entries of a presets file's list (objects with a `ladder` key), checked; the
    /// problem names the entry.
    static func entries(in list: [Any]) -> (ladders: [NamedLadder], problem: String?) {
        var ladders: [NamedLadder] = []
        for (index, element) in list.enumerated() {
            guard let object = element as? [String: Any], object["ladder"] != nil else { continue }
            let label = (object["name"] as? String).map { "ladder '\($0)'" } ?? "entry \(index + 1)"
            if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
                return ([], "\(label): unknown key '\(unknown)' (known: \(keys.sorted().joined(separator: ", ")))")
            }
            for rung in object["ladder"] as? [Any] ?? [] {
                if let unknown = (rung as? [String: Any])?.keys.sorted().first(where: { !rungKeys.contains($0) }) {
                    return (
                        [],
                        "\(label): unknown rung key '\(unknown)' (known: \(rungKeys.sorted().joined(separator: ", ")))"
                    )
                }
            }
            let ladder: NamedLadder
            do {
                ladder = try JSONDecoder().decode(
                    NamedLadder.self,
                    from: JSONSerialization.data(withJSONObject: object)
                )
            } catch {
                return (
                    [],
                    "\(label): expected {\"name\", \"codec\": \"h264\"|\"hevc\", \"ladder\": [{\"name\", \"short_side\", \"bitrate\"}, …]}"
                )
            }
            if let problem = ladder.validationProblem { return ([], "\(label): \(problem)") }
            guard !ladders.contains(where: { $0.name == ladder.name }) else {
                return ([], "\(label) is defined twice")
            }
            ladders.append(ladder)
        }
        return (ladders, nil)
    }
}

extension PresetCatalog {
    /// What `--ladder TEXT --codec CODEC` asks for: a ladder of the presets file by name (its
    /// rungs and codec are stored with the job, so workers need no presets file), else `auto`
    /// or rungs of the built-in table. `invalid_request` for an unknown rung, or a codec other
    /// than a named ladder's.
    public func ladderOptions(_ text: String?, codec: Ladder.Codec?) throws(MediaError) -> LadderOptions {
        let text = text?.trimmingCharacters(in: .whitespaces) ?? "auto"
        if let named = ladder(named: text) {
            if let codec, codec != named.codec {
                throw MediaError(
                    .invalidRequest,
                    "ladder '\(named.name)' is \(named.codec); leave out the codec or give \(named.codec)"
                )
            }
            return LadderOptions(ladder: named.name, codec: named.codec, rungs: named.rungs)
        }
        let options = LadderOptions(ladder: text, codec: codec ?? .h264)
        do { try options.check() } catch {
            guard !ladders.isEmpty else { throw error }
            throw MediaError(
                .invalidRequest,
                "\(error.message), or a ladder of the presets file: \(ladders.map(\.name).joined(separator: ", "))"
            )
        }
        return options
    }
}
