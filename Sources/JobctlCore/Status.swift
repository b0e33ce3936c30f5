/// A status: of a job, a reader, a writer, an export session, a track — the `AVAssetReader.Status`
/// enum that docs/spec.md §4 makes the contract. One type for the media pipeline (`Status`) and
/// the queue (`JobStatus` is this type), so the two can never drift apart; it lives here so the
/// queue and its stores never link FFmpeg.
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
