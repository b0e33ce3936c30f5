import Foundation
import JobctlCore
import Media
import Queue
import Streaming

extension JobKind {
    public static let hls: JobKind = "hls"
}

/// `hls`: an adaptive-streaming ladder (HLS and DASH over one set of CMAF files) written into
/// the output directory, to a `{name}` URL template or under an object-store prefix, as a set:
/// media first, playlists last, `master.m3u8` the very last.
public enum HLSKind: FileSetKind, SplittableKind {
    /// `"hls": {…}`, the flags of `jobctl hls`.
    public struct Request: Codable, Sendable, Hashable {
        /// `auto`, or rungs such as `1080p,720p,480p`.
        public var ladder: String?
        /// `h264` (default) or `hevc`.
        public var codec: String?

        public init(ladder: String? = nil, codec: String? = nil) {
            self.ladder = ladder
            self.codec = codec
        }
    }

    public static let kind = JobKind.hls

    public static func options(
        from request: Request?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> LadderOptions {
        let request = request ?? Request()
        if format != nil { throw rules.invalid("format", "is not used by hls jobs (a ladder is CMAF: fMP4 segments)") }
        var codec: Ladder.Codec?
        if let name = request.codec {
            guard let known = Ladder.Codec(rawValue: name) else {
                throw rules.invalid("\(field).codec", "is h264 or hevc, not '\(name)'")
            }
            codec = known
        }
        var options = LadderOptions()
        try rules.checking("\(field).ladder") { () throws(MediaError) in
            options = try rules.catalog.ladderOptions(request.ladder, codec: codec)
        }
        return options
    }

    /// A ladder made by one worker, as a file set (a split one: `LadderSplit`, below).
    public static func prepare(_ job: Job, options: LadderOptions, context: RunContext) async throws -> any PreparedJob
    {
        try await FileSetJob.prepare(job, context: context) { asset, range in
            try work(on: asset, options: options, range: range)
        }
    }

    public static func work(on asset: Asset, options: LadderOptions, range: TimeRange) throws(MediaError) -> Work {
        Work(session: try LadderSession(asset: asset, options: options, timeRange: range))
    }

    public struct Work: FileSetWork {
        /// The session itself: `jobctl hls` runs it into the directory it was given
        /// (`run(directory:)`) rather than into files a worker stages and publishes.
        public let session: LadderSession

        init(session: LadderSession) { self.session = session }

        public var progress: Double { session.progress }
        public func cancel() { session.cancel() }
        public static let isSetFile: @Sendable (String) -> Bool = LadderSession.isSetFile

        public func run(into files: StagedFiles) throws -> JSONValue {
            try .result(["hls": try session.run(into: files)])
        }
    }
}

/// A ladder split across workers (`LadderSplit`): it fans out, its chunks encode video, its
/// join encodes the sound and publishes.
extension HLSKind {
    typealias Part = LadderChunk

    static func check(
        _ split: SplitRequest,
        for request: JobRequest,
        rules: SubmissionRules
    ) throws(SubmissionError) {
        // A ladder's chunks are whole 6 s segments, at most `LadderSplit.longestChunk`.
        if case .segments(let length) = split, length > LadderSplit.longestChunk {
            throw rules.invalid("split", "is at most 3:00 for an hls ladder (chunks of whole 6 s segments)")
        }
    }

    static func fanOut(
        _ job: Job,
        options: LadderOptions,
        split: SplitRequest,
        context: RunContext
    )
        async throws -> FanOutJob?
    {
        try await LadderSplit.fanOut(job, options: options, split: split, context: context)
    }

    static func preparePart(
        _ job: Job,
        options: LadderOptions,
        part: Part,
        context: RunContext
    ) async throws
        -> any PreparedJob
    {
        try await LadderSplit.prepareChunk(job, options: options, chunk: part, context: context)
    }

    static func prepareJoin(
        _ job: Job,
        options: LadderOptions,
        context: RunContext
    ) async throws
        -> any PreparedJob
    {
        try await LadderSplit.prepareJoin(job, options: options, context: context)
    }
}
