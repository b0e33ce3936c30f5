import Foundation
import Media
import ObjectStorage
import Queue
import SafeHTTP

/// What a worker gives a kind to prepare one attempt: the claim, the fence around local files,
/// where uploads wait, what a job may cost, and the guarded HTTP client for remote media.
public struct RunContext: Sendable {
    /// The attempt's claim (its temporary files are tagged with it).
    public var lease: Lease
    /// `--input-root` / `--output-root`: local paths resolve under them (`JobPaths`).
    public var inputRoot: String?
    public var outputRoot: String?
    /// Where outputs to `http(s)` URLs are written before their upload.
    public var stagingDirectory: String
    /// What one job may cost (`limit_exceeded` beyond).
    public var limits: ResourceLimits
    /// Every request for remote media goes through it (the address guard).
    public var sender: HTTPSender
    /// A graph's parent's children (a join reads their results); empty for other jobs.
    public var children: [Job]
    /// Where the parts of split exports are written (`--scratch`): every worker of a fleet
    /// must reach the same one.
    public var scratchDirectory: String
    /// Workers alive now (a split of `auto` needs more than one); 1 when not counted.
    public var aliveWorkers: Int
    /// The object store client for `s3://` locations, made on first use: the worker's
    /// (`WorkerOptions.objectStore`).
    public var objectStore: S3ClientProvider
    /// `--s3-root`: each API key's jobs may use `ROOT/KEYID/` (`TenantObjects`); `nil`: none.
    public var objectRoot: String?

    public init(
        lease: Lease,
        inputRoot: String?,
        outputRoot: String?,
        stagingDirectory: String,
        limits: ResourceLimits,
        sender: HTTPSender,
        children: [Job] = [],
        scratchDirectory: String? = nil,
        aliveWorkers: Int = 1,
        objectStore: S3ClientProvider,
        objectRoot: String? = nil
    ) {
        self.lease = lease
        self.inputRoot = inputRoot
        self.outputRoot = outputRoot
        self.stagingDirectory = stagingDirectory
        self.limits = limits
        self.sender = sender
        self.children = children
        self.scratchDirectory = scratchDirectory ?? stagingDirectory
        self.aliveWorkers = aliveWorkers
        self.objectStore = objectStore
        self.objectRoot = objectRoot
    }
}
