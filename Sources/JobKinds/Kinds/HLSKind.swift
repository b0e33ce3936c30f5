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
public enum HLSKind: FileSetKind {
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

    /// A ladder split across workers fans out, its chunks encode video, its join publishes
    /// (`LadderSplit`); any other ladder is one worker's file set.
    public static func prepare(_ job: Job, options: LadderOptions, context: RunContext) async throws -> any PreparedJob
    {
        if let chunk = try job.ladderChunk() {
            return try await LadderSplit.prepareChunk(job, options: options, chunk: chunk, context: context)
        }
        if job.parent == nil, let split = job.splitRequest() {
            switch job.graphPhase {
            case .join:
                return try await LadderSplit.prepareJoin(job, options: options, context: context)
            case .none:
                if let fanOut = try await LadderSplit.fanOut(job, options: options, split: split, context: context) {
                    return fanOut
                }
            case .waiting:
                throw JobError(code: .internalError, message: "job \(job.id) was claimed while its chunks run")
            }
        }
        return try await FileSetJob.prepare(job, context: context) { asset, range in
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
