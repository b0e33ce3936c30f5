import Foundation
import Media
import ObjectStorage
import Queue
import SafeHTTP

/// How a worker process runs (flags of `jobctl worker`).
public struct WorkerOptions: Sendable {
    /// Recorded with each claim and in the workers table.
    public var name: String
    /// Jobs run at once. One transcode saturates about 2 cores.
    public var concurrency: Int
    /// How long a claim holds without renewal; renewed every third of it (at least every 2 s)
    /// while a job runs.
    public var lease: Duration
    /// On SIGTERM/SIGINT: how long running jobs may finish before they are handed back.
    public var drain: Duration
    /// Exit once nothing is claimable and nothing runs (instead of waiting for more work).
    public var once: Bool
    /// How often an idle worker looks for work.
    public var pollInterval: Duration
    /// How often a running job checks whether it was cancelled (docs/spec.md §5: within 2 s).
    public var cancellationCheckInterval: Duration
    public var retryPolicy: RetryPolicy
    /// Which addresses remote inputs and outputs may be on (docs/spec.md §6, the webhooks' rules).
    public var addressPolicy: AddressPolicy
    /// Where exports to `http(s)` outputs are written before their upload.
    public var stagingDirectory: String
    /// Where the parts of split exports are written: one directory every worker of a fleet
    /// reaches (`--scratch`); the staging directory by default (workers on one host).
    public var scratchDirectory: String
    /// An upload that fails with a network error, 408, 429 or 5xx is tried again after each of
    /// these; then the attempt fails with `output_unwritable`.
    public var uploadRetryDelays: [Duration]
    /// Local inputs must resolve under this directory (`..` and symlinks resolved), else
    /// `input_not_found`. `nil`: anywhere the process can read.
    public var inputRoot: String?
    /// Local outputs must resolve under this directory, else `output_forbidden`.
    public var outputRoot: String?
    /// `--s3-root`: an API key's jobs may use `ROOT/KEYID/` of the object store; `nil`: none.
    public var objectRoot: String?
    /// Makes the object store client for `s3://` inputs, outputs and the sweep of abandoned
    /// uploads, on first use. The command line gives the process's (`.environment`); nothing
    /// in the worker reaches for one of its own.
    public var objectStore: S3ClientProvider
    /// What one job may cost (`limit_exceeded` beyond).
    public var limits: ResourceLimits

    public init(
        name: String,
        concurrency: Int = 1,
        lease: Duration = .seconds(30),
        drain: Duration = .seconds(30),
        once: Bool = false,
        pollInterval: Duration = .milliseconds(100),
        cancellationCheckInterval: Duration = .milliseconds(500),
        retryPolicy: RetryPolicy = .default,
        addressPolicy: AddressPolicy = AddressPolicy(),
        stagingDirectory: String = WorkerOptions.defaultStagingDirectory,
        scratchDirectory: String? = nil,
        uploadRetryDelays: [Duration] = [.seconds(1), .seconds(4), .seconds(15)],
        inputRoot: String? = nil,
        outputRoot: String? = nil,
        objectRoot: String? = nil,
        objectStore: S3ClientProvider,
        limits: ResourceLimits = .default
    ) {
        precondition(concurrency > 0 && lease >= .milliseconds(300))
        self.name = name
        self.concurrency = concurrency
        self.lease = lease
        self.drain = drain
        self.once = once
        self.pollInterval = pollInterval
        self.cancellationCheckInterval = cancellationCheckInterval
        self.retryPolicy = retryPolicy
        self.addressPolicy = addressPolicy
        self.stagingDirectory = stagingDirectory
        self.scratchDirectory = scratchDirectory ?? stagingDirectory
        self.uploadRetryDelays = uploadRetryDelays
        self.inputRoot = inputRoot
        self.outputRoot = outputRoot
        self.objectRoot = objectRoot
        self.objectStore = objectStore
        self.limits = limits
    }

    /// `$TMPDIR/jobctl-staging` (`/tmp/jobctl-staging`).
    public static var defaultStagingDirectory: String {
        (FileManager.default.temporaryDirectory.path as NSString).appendingPathComponent("jobctl-staging")
    }

    /// Leases are renewed, and progress stored, this often while a job runs: every third of the
    /// lease, and at least every 2 s so `watch` and `show` stay current.
    var heartbeatInterval: Duration { min(lease / 3, .seconds(2)) }
}
