import Foundation
import JobctlCore
import Media
import Queue

extension JobKind {
    public static let storyboard: JobKind = "storyboard"
}

/// `storyboard`: a sprite sheet of evenly spaced tiles, a WebVTT file pointing into it and a
/// JSON description, for hover previews on a seek bar.
public enum StoryboardKind: FileSetKind {
    /// `"storyboard": {…}`, the flags of `jobctl storyboard`.
    public struct Request: Codable, Sendable, Hashable {
        public var tiles: WholeNumber?
        public var tileSize: String?
        public var columns: WholeNumber?

        public init(tiles: WholeNumber? = nil, tileSize: String? = nil, columns: WholeNumber? = nil) {
            self.tiles = tiles
            self.tileSize = tileSize
            self.columns = columns
        }
    }

    public static let kind = JobKind.storyboard

    public static func options(
        from request: Request?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> StoryboardOptions {
        let request = request ?? Request()
        var options = StoryboardOptions()
        options.tiles = request.tiles?.value
        options.columns = request.columns?.value
        if let size = try rules.pictureSize(request.tileSize, "storyboard.tileSize") { options.tileSize = size }
        options.format = try rules.imageFormat(format, for: kind)
        try rules.checking(field) { () throws(MediaError) in try options.check() }
        return options
    }

    public static func work(on asset: Asset, options: StoryboardOptions, range: TimeRange) throws(MediaError) -> Work {
        Work(session: try StoryboardSession(asset: asset, options: options, timeRange: range))
    }

    /// The result's `storyboard`.
    struct Result: Encodable {
        var description: StoryboardDescription
        var columns: Int
        var rows: Int
    }

    public struct Work: FileSetWork {
        /// The session itself: `jobctl storyboard` runs it into the directory it was given
        /// (`run(directory:)`) rather than into files a worker stages and publishes.
        public let session: StoryboardSession
        public var progress: Double { session.progress }
        public func cancel() { session.cancel() }
        public static let isSetFile: @Sendable (String) -> Bool = StoryboardSession.isSetFile

        public func run(into files: StagedFiles) throws -> JSONValue {
            let result = try session.run(into: files)
            return try .result(
                ["storyboard": Result(description: result.description, columns: result.columns, rows: result.rows)]
            )
        }
    }
}
