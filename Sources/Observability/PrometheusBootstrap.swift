import Metrics
import Prometheus

/// Makes Prometheus the swift-metrics backend of this process, with histogram buckets that
/// suit each measurement. Call once, before anything records.
public enum PrometheusBootstrap {
    public static func bootstrap() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            // From claim to outcome: seconds to an hour.
            "jobctl_job_duration_seconds": [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600].map { .seconds($0) },
            // From runnable to claimed: milliseconds when workers are idle, longer when busy.
            "jobctl_pickup_latency_seconds": [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 10_000, 60_000, 600_000]
                .map { .milliseconds($0) },
            "jobctl_webhook_latency_seconds": [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 15_000].map {
                .milliseconds($0)
            },
        ]
        // × real time: below 1 an export is slower than playback.
        factory.valueHistogramBuckets = ["jobctl_encode_speed_ratio": [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128]]
        MetricsSystem.bootstrap(factory)
        return registry
    }
}
