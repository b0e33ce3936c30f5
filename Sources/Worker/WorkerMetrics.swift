import Foundation
import Metrics

/// Every metric a worker records, in one place (nothing else in the module calls swift-metrics).
/// What a worker reports through swift-metrics (a Prometheus registry when `--metrics-port`
/// is given; nothing otherwise). Names follow Prometheus conventions; see docs/operations.md.
enum WorkerMetrics {
    /// How an attempt ended (`outcome`: the state machine's outcome, e.g. `handed_back`).
    static func attemptEnded(_ outcome: AttemptStateMachine.Outcome, after duration: Duration) {
        Counter(label: "jobctl_job_attempts_total", dimensions: [("outcome", outcome.rawValue)]).increment()
        Metrics.Timer(label: "jobctl_job_duration_seconds", dimensions: [("outcome", outcome.rawValue)]).record(
            duration: duration
        )
    }

    /// A no-op job (queue benchmarks, health checks) completed; its duration is not timed.
    static func noopCompleted() {
        Counter(
            label: "jobctl_job_attempts_total",
            dimensions: [("outcome", AttemptStateMachine.Outcome.completed.rawValue)]
        ).increment()
    }

    /// From the moment a job could run (submitted, or its retry backoff over) to its claim.
    static func claimed(runAt: Date) {
        Metrics.Timer(label: "jobctl_pickup_latency_seconds").record(
            duration: .milliseconds(Int64(max(0, Date().timeIntervalSince(runAt)) * 1000))
        )
    }

    /// Seconds of media produced per second of wall time (× real time) of a completed export.
    static func encoded(mediaSeconds: Double, in wall: Duration) {
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        guard seconds > 0, mediaSeconds > 0 else { return }
        Recorder(label: "jobctl_encode_speed_ratio", aggregate: true).record(mediaSeconds / seconds)
    }

    static func uploaded(bytes: Int64) {
        Counter(label: "jobctl_upload_bytes_total").increment(by: Int(bytes))
    }

    static func running(_ count: Int) {
        Gauge(label: "jobctl_jobs_running").record(count)
    }
}
