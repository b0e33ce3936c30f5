import Foundation
import JobctlCore
import Media
import Queue

extension JobKind {
    public static let thumbnails: JobKind = "thumbnails"
}

/// `thumbnails`: images at given times (`AVAssetImageGenerator`), written into a directory all
/// at once (`thumb-001.jpg`…), each listed in the result with its time.
public enum ThumbnailsKind: FileSetKind {
    /// `"thumbnails": {…}`, the flags of `jobctl thumbnails`.
    public struct Request: Codable, Sendable, Hashable {
        /// `"1s,50%,end"` or `["1s", "50%", "end"]`.
        public var at: ListValue?
        public var every: String?
        public var count: WholeNumber?
        public var exact: Bool?
        public var tolerance: String?
        public var size: String?

        public init(
            at: ListValue? = nil,
            every: String? = nil,
            count: WholeNumber? = nil,
            exact: Bool? = nil,
            tolerance: String? = nil,
            size: String? = nil
        ) {
            self.at = at
            self.every = every
            self.count = count
            self.exact = exact
            self.tolerance = tolerance
            self.size = size
        }
    }

    public static let kind = JobKind.thumbnails

    public static func options(
        from request: Request?,
        format: String?,
        rules: SubmissionRules
    ) throws(SubmissionError) -> ThumbnailOptions {
        let request = request ?? Request()
        var options = ThumbnailOptions()
        if let at = request.at {
            do {
                options.times = try ImageTime.parseList(at.text)
            } catch {
                throw SubmissionError(
                    code: .invalidRequest,
                    field: "thumbnails.at",
                    message: "\(rules.name("thumbnails.at")): \(error.description)"
                )
            }
        }
        options.every = try rules.duration(request.every, "thumbnails.every")
        options.count = request.count?.value
        if request.exact == true {
            guard request.tolerance == nil else {
                throw rules.invalid(
                    "thumbnails.tolerance",
                    "and \(rules.name("thumbnails.exact")) are alternatives: give one"
                )
            }
            options.toleranceBefore = 0
            options.toleranceAfter = 0
        } else if let tolerance = try rules.duration(request.tolerance, "thumbnails.tolerance") {
            options.toleranceBefore = tolerance
            options.toleranceAfter = tolerance
        }
        options.maximumSize = try rules.pictureSize(request.size, "thumbnails.size")
        options.format = try rules.imageFormat(format, for: kind)
        try rules.checking(field) { () throws(MediaError) in try options.check() }
        return options
    }

    public static func work(on asset: Asset, options: ThumbnailOptions, range: TimeRange) throws(MediaError) -> Work {
        Work(session: try ThumbnailSession(asset: asset, options: options, timeRange: range))
    }

    public struct Work: FileSetWork {
        /// The session itself: `jobctl thumbnails` runs it into the directory it was given
        /// (`run(directory:)`) rather than into files a worker stages and publishes.
        public let session: ThumbnailSession
        public var progress: Double { session.progress }
        public func cancel() { session.cancel() }
        public func run(into files: StagedFiles) throws -> JSONValue {
            try .result(["images": try session.run(into: files)])
        }
        public static let isSetFile: @Sendable (String) -> Bool = ThumbnailSession.isSetFile
    }
}
