/// The status of a reader, a writer, an export session, a track, and (later) a job: the
/// `AVAssetReader.Status` enum that docs/spec.md §4 makes the contract.
public enum Status: String, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case unknown
    case reading
    case completed
    case failed
    case cancelled

    public var description: String { rawValue }

    /// `completed`, `failed` and `cancelled` are final.
    public var isTerminal: Bool {
        switch self {
        case .completed, .failed, .cancelled: true
        case .unknown, .reading: false
        }
    }
}
