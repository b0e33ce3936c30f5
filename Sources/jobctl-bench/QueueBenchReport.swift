import ArgumentParser
import CommandLineSupport
import Foundation
import JobctlCore
import Logging
import PostgresNIO
import Queue
import QueuePostgres
import QueueSQLite
import SafeHTTP
import Webhooks

/// What `bench queue --json` prints.
struct QueueBenchReport: Encodable {
    struct Throughput: Encodable {
        let workers: Int
        /// Every run's duration, and their median.
        let seconds: [Double]
        let medianSeconds: Double
        let jobsPerSecond: Double
        /// With a backlog: high-priority jobs' pickup during the drains.
        let pickupUnderLoad: Pickup?
        /// With a backlog: the table after the insert and after the run.
        let tables: [TableState]

        init(workers: Int, jobs: Int, seconds: [Double], pickupUnderLoad: Pickup?, tables: [TableState]) {
            self.workers = workers
            self.seconds = seconds
            medianSeconds = seconds.sorted()[seconds.count / 2]
            jobsPerSecond = Double(jobs) / medianSeconds
            self.pickupUnderLoad = pickupUnderLoad
            self.tables = tables
        }
    }

    /// Milliseconds.
    struct Pickup: Encodable {
        let samples: Int
        let p50: Double
        let p99: Double
        let max: Double

        init(_ latencies: [Double]) {
            let sorted = latencies.sorted()
            func percentile(_ p: Double) -> Double {
                sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
            }
            samples = sorted.count
            p50 = percentile(0.5)
            p99 = percentile(0.99)
            max = sorted.last ?? 0
        }
    }

    struct TableState: Encodable {
        var moment = ""
        let tableBytes: Int64
        let indexBytes: Int64
        let liveRows: Int64
        let deadRows: Int64
        let autovacuums: Int64
        let autoanalyzes: Int64

        func at(_ moment: String) -> TableState {
            var state = self
            state.moment = moment
            return state
        }
    }

    /// `--steady`: one run per worker count and repeat.
    struct Steady: Encodable {
        let workers: Int
        let seconds: Double
        let submitted: Int
        /// Jobs completed within the window, per second.
        let completedPerSecond: Double
        let submittedPerSecond: Double
        /// Jobs still queued when the window closed.
        let queuedAtEnd: Int
        /// The queue's age: each job's claim minus its submission, in milliseconds.
        let age: Pickup
    }

    let store: String
    let jobs: Int
    let backlog: Int
    let concurrency: Int
    var throughput: [Throughput]
    var pickup: Pickup?
    var steady: [Steady] = []
}
