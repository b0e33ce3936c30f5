import Foundation
import JobctlCore

/// What a job does, by name: the job table's `kind` column and the JSON's `"kind"`
/// (docs/spec.md §4). The queue stores and lists any name; what a name means (its options, its
/// checks, how a worker runs it) is the kind's definition, registered once in the JobKinds
/// module (`JobKinds.all`). The queue itself knows two: `export`, the default of a request, and
/// `noop`, which it completes without work.
public struct JobKind: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    /// An `AVAssetExportSession`: an input, a preset, a range, an output. A request's default.
    public static let export: JobKind = "export"
    /// Does nothing and completes at once: for measuring the queue itself and for health checks.
    public static let noop: JobKind = "noop"
}

/// A job as `show --json` prints it and a webhook carries it (docs/spec.md §4).
public struct Job: Sendable, Hashable, Codable {
    public var id: JobID
    public var kind: JobKind
    public var status: JobStatus
    public var input: String
    public var output: String
    /// The preset's name, and its settings as they were when the job was submitted (so every
    /// worker runs the same preset, whatever presets file it has).
    public var preset: String
    public var presetSettings: JSONValue
    public var format: String?
    public var range: Range?
    public var priority: Int
    /// The attempt running or last run (0 before the first claim).
    public var attempt: Int
    public var maxAttempts: Int
    /// 0…1 while running; 1 once completed.
    public var progress: Double
    public var tracks: [JobTrack]
    public var result: JSONValue?
    public var error: JobError?
    public var webhook: String?
    public var metadata: [String: String]
    public var idempotencyKey: String?
    /// The worker running it, or the last one that did.
    public var worker: String?
    /// A running job whose cancellation was asked for (the worker stops within 2 s).
    public var cancelRequested: Bool
    /// When a queued job may next be claimed (its retry time).
    public var runAt: Date
    public var createdAt: Date
    public var startedAt: Date?
    public var finishedAt: Date?
    /// The API key that submitted it (`jobctl serve`); `nil` for the CLI.
    public var owner: String?
    /// The job whose attempt fanned out into this one (issue 27), and this child's place among
    /// its siblings; `nil` for a job submitted by itself.
    public var parent: JobID?
    public var childIndex: Int?
    /// A parent's children as they stand (`JobGraphStateMachine`); `nil` before it fans out.
    public var children: JobGraphStateMachine.Children?
    /// Its place in a graph: standalone, a parent with its plan, or a child with its part.
    public var role: JobRole

    /// Where a parent is in its graph (derived from `children`).
    public var graphPhase: JobGraphStateMachine.Phase {
        guard let children, children.total > 0 else { return .none }
        return children.completed == children.total ? .join : .waiting
    }

    public init(
        id: JobID,
        kind: JobKind,
        status: JobStatus,
        input: String,
        output: String,
        preset: String,
        presetSettings: JSONValue,
        format: String?,
        range: Range?,
        priority: Int,
        attempt: Int,
        maxAttempts: Int,
        progress: Double,
        tracks: [JobTrack],
        result: JSONValue?,
        error: JobError?,
        webhook: String?,
        metadata: [String: String],
        idempotencyKey: String?,
        worker: String?,
        cancelRequested: Bool,
        runAt: Date,
        createdAt: Date,
        startedAt: Date?,
        finishedAt: Date?,
        owner: String? = nil,
        parent: JobID? = nil,
        childIndex: Int? = nil,
        children: JobGraphStateMachine.Children? = nil,
        role: JobRole = .standalone
    ) {
        self.id = id
        self.kind = kind
        self.status = status
        self.input = input
        self.output = output
        self.preset = preset
        self.presetSettings = presetSettings
        self.format = format
        self.range = range
        self.priority = priority
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.progress = progress
        self.tracks = tracks
        self.result = result
        self.error = error
        self.webhook = webhook
        self.metadata = metadata
        self.idempotencyKey = idempotencyKey
        self.worker = worker
        self.cancelRequested = cancelRequested
        self.runAt = runAt
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.owner = owner
        self.parent = parent
        self.childIndex = childIndex
        self.children = children
        self.role = role
    }

    /// Seconds, as in the job JSON; `duration` is `nil` for "to the end".
    public struct Range: Sendable, Hashable, Codable {
        public var start: Double
        public var duration: Double?

        public init(start: Double, duration: Double?) {
            self.start = start
            self.duration = duration
        }

        /// `{"start": 1, "duration": null}` for "to the end" (every field, always).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(start, forKey: .start)
            try container.encode(duration, forKey: .duration)
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, status, input, output, preset, presetSettings, format, range, priority, attempt, maxAttempts,
            progress, tracks,
            result, error, webhook, metadata, idempotencyKey, worker, cancelRequested, runAt, createdAt, startedAt,
            finishedAt, owner, parent, childIndex, children, role
    }

    /// The input as shown: a URL without credentials or query (`MediaLocation.displayed`).
    public var displayInput: String { MediaLocation.displayed(input) }
    /// The output as shown: a URL without credentials or query (`MediaLocation.displayed`).
    public var displayOutput: String { MediaLocation.displayed(output) }

    /// `range`, `result`, `error`, `webhook` and friends are written as `null` when absent, so
    /// the JSON always has every field (docs/spec.md §4).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(status, forKey: .status)
        try container.encode(displayInput, forKey: .input)
        try container.encode(displayOutput, forKey: .output)
        try container.encode(preset, forKey: .preset)
        try container.encode(presetSettings, forKey: .presetSettings)
        try container.encode(format, forKey: .format)
        try container.encode(range, forKey: .range)
        try container.encode(priority, forKey: .priority)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(maxAttempts, forKey: .maxAttempts)
        try container.encode(progress, forKey: .progress)
        try container.encode(tracks, forKey: .tracks)
        try container.encode(result, forKey: .result)
        try container.encode(error, forKey: .error)
        try container.encode(webhook.map(MediaLocation.displayed), forKey: .webhook)
        try container.encode(metadata, forKey: .metadata)
        try container.encode(idempotencyKey, forKey: .idempotencyKey)
        try container.encode(worker, forKey: .worker)
        try container.encode(cancelRequested, forKey: .cancelRequested)
        try container.encode(runAt, forKey: .runAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(finishedAt, forKey: .finishedAt)
        try container.encode(owner, forKey: .owner)
        try container.encode(parent, forKey: .parent)
        try container.encode(childIndex, forKey: .childIndex)
        try container.encode(children, forKey: .children)
        try container.encode(role, forKey: .role)
    }
}

/// One track of a running or finished job: its status and counters (docs/spec.md §4).
public struct JobTrack: Sendable, Hashable, Codable {
    /// The track's index in the output.
    public var index: Int
    public var sourceIndex: Int
    public var mediaType: String
    public var status: JobStatus
    public var codec: String?
    /// Frames (video), samples (audio) or packets (copies) read and written.
    public var read: Int64
    public var written: Int64

    /// Every field, `codec` as `null` when unknown.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(index, forKey: .index)
        try container.encode(sourceIndex, forKey: .sourceIndex)
        try container.encode(mediaType, forKey: .mediaType)
        try container.encode(status, forKey: .status)
        try container.encode(codec, forKey: .codec)
        try container.encode(read, forKey: .read)
        try container.encode(written, forKey: .written)
    }

    public init(
        index: Int,
        sourceIndex: Int,
        mediaType: String,
        status: JobStatus,
        codec: String?,
        read: Int64,
        written: Int64
    ) {
        self.index = index
        self.sourceIndex = sourceIndex
        self.mediaType = mediaType
        self.status = status
        self.codec = codec
        self.read = read
        self.written = written
    }
}

/// Why an attempt failed (docs/spec.md §4): a code from the contract, a message a person can act on,
/// and whether another attempt could succeed.
public struct JobError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    public var retryable: Bool

    /// `retryable` by default as the code says (input, range and preset errors are final;
    /// output, lease and internal errors are retried: docs/spec.md §4); a failure that knows
    /// better (a 5xx from an input's server) says so.
    public init(code: ErrorCode, message: String, retryable: Bool? = nil) {
        self.code = code
        self.message = message
        self.retryable = retryable ?? code.isRetryable
    }

    public var description: String { "\(code): \(message)" }

    /// The message of `worker_crashed`, the same from every store (SQL builds it from `worker`).
    public static func workerCrashedMessage(worker: String) -> String {
        "its workers stopped renewing the lease on \(JobStateMachine.crashLimit) attempts (killed, crashed or frozen; the last was \(worker)): set aside as a poison job; `jobctl retry --force` runs it again"
    }
}

extension Job {
    /// The encoder for job JSON everywhere (`show --json`, webhooks): sorted keys, ISO 8601
    /// UTC timestamps with milliseconds.
    public static func makeJSONEncoder(pretty: Bool = true) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting =
            pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Job.timestamp(date))
        }
        return encoder
    }

    /// `2026-11-21T07:30:12.345Z`. The formatter truncates to the millisecond, and a date made
    /// from milliseconds can sit a hair below its millisecond: format the middle of it.
    public static func timestamp(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        return Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(
            Date(timeIntervalSince1970: (milliseconds + 0.5) / 1000)
        )
    }
}

extension Job {
    /// Video frames written per second of the job's run so far (to its end, or to `now` while
    /// it runs); `nil` before it starts or without a video track. A graph's children show it
    /// (`show`, a split export's segment table).
    public func videoFramesPerSecond(now: Date = Date()) -> Double? {
        guard let frames = tracks.first(where: { $0.mediaType == "video" })?.written, let startedAt else { return nil }
        let seconds = (finishedAt ?? now).timeIntervalSince(startedAt)
        return seconds > 0 ? Double(frames) / seconds : nil
    }
}
