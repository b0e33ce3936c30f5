import Foundation
import Queue

/// How fast a running job goes, from what its heartbeats report: the frames its video tracks
/// have written and its progress since this attempt started. Averages over the attempt, so a
/// page shows steady numbers rather than one heartbeat's.
public struct JobPace: Sendable, Equatable {
    /// Video frames written per second; `nil` before the first frame.
    public var framesPerSecond: Double?
    /// Media time encoded per second of real time, when the job's length is known (a range with
    /// a duration).
    public var speed: Double?
    /// Seconds left at this pace; `nil` below 1 % (too early to say).
    public var secondsLeft: Double?

    /// `nil` unless `job` is running with a start time at least a second ago.
    public init?(_ job: Job, now: Date) {
        guard job.status == .reading, let started = job.startedAt else { return nil }
        let elapsed = now.timeIntervalSince(started)
        guard elapsed >= 1 else { return nil }
        let frames = job.tracks.filter { $0.mediaType == "video" }.reduce(Int64(0)) { $0 + $1.written }
        framesPerSecond = frames > 0 ? Double(frames) / elapsed : nil
        let progress = min(max(job.progress, 0), 1)
        speed = job.range?.duration.map { $0 * progress / elapsed }
        secondsLeft = progress >= 0.01 ? elapsed * (1 - progress) / progress : nil
    }

    /// "142 fps, 3.1× real time, about 18 s left" (what is known of it), or `nil`.
    public var text: String? {
        var parts: [String] = []
        if let framesPerSecond { parts.append(Self.fps(framesPerSecond)) }
        if let speed { parts.append(String(format: "%.1f× real time", speed)) }
        if let secondsLeft { parts.append("about \(FleetView.duration(secondsLeft)) left") }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    /// "142 fps" (one decimal under 10).
    public static func fps(_ value: Double) -> String {
        value < 10 ? String(format: "%.1f fps", value) : "\(Int(value.rounded())) fps"
    }
}
