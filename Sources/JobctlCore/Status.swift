/// A status: of a reader, a writer, an export session, a track — the `AVAssetReader.Status` enum
/// that docs/spec.md §4 makes the contract. The queue's `JobStatus` has the same names but is
/// its own type (a job's lifecycle may grow where a reader's does not); a track's status in the
/// job table converts by raw value.
public enum Status: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Not started. For a job: queued, waiting to be claimed or for its retry time.
    case unknown
    /// Running. For a job: claimed by a worker.
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
