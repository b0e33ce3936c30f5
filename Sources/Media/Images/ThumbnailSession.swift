import Foundation
import JobctlCore
import Synchronization

/// What images to take and how: the options of `jobctl thumbnails` and of a `thumbnails` job.
public struct ThumbnailOptions: Sendable, Hashable, Codable {
    /// Explicit times (`--at`).
    public var times: [ImageTime] = []
    /// One image every this many µs from the range's start (`--every`).
    public var every: Int64?
    /// This many images evenly spaced (`--count`).
    public var count: Int?
    /// µs; `nil`: infinite (the nearest keyframe before the time is good enough).
    public var toleranceBefore: Int64?
    public var toleranceAfter: Int64?
    /// The largest image; 0 on an axis leaves it free.
    public var maximumSize: PictureSize?
    public var format: ImageFormat = .jpeg

    /// At most this many images per request (`--every 1ms` on a long file is a mistake).
    public static let maximumCount = 1000

    public init() {}

    /// Zero tolerance both ways: each image is the frame displayed at its time.
    public var isExact: Bool { toleranceBefore == 0 && toleranceAfter == 0 }

    /// The checks of the command line's, again for options that came another way (a job row).
    /// Every number is bounded (`invalid_request` naming the option): the same rules at
    /// submission and in the worker, so no stored value can make a run trap or run away.
    public func check() throws(MediaError) {
        let longest = "at most \(TimeRange.format(TimeRange.longest))"
        if let count, !(1...Self.maximumCount).contains(count) {
            throw .invalidOption("count", "is between 1 and \(Self.maximumCount)")
        }
        if let every, !(1...TimeRange.longest).contains(every) {
            throw .invalidOption("every", "is longer than zero and \(longest)")
        }
        if times.count > Self.maximumCount { throw .invalidOption("at", "lists at most \(Self.maximumCount) times") }
        for time in times {
            switch time {
            case .at(let time) where !(0...TimeRange.longest).contains(time):
                throw .invalidOption("at", "has times from 0 to \(TimeRange.format(TimeRange.longest))")
            case .fraction(let fraction) where !(0...1).contains(fraction):
                throw .invalidOption("at", "has percentages from 0% to 100%")
            default: break
            }
        }
        for tolerance in [toleranceBefore, toleranceAfter] {
            if let tolerance, !(0...TimeRange.longest).contains(tolerance) {
                throw .invalidOption("tolerance", "is 0 or more and \(longest)")
            }
        }
        if let maximumSize, !(0...16384).contains(maximumSize.width) || !(0...16384).contains(maximumSize.height) {
            throw .invalidOption("size", "has sides of at most 16384")
        }
    }

    /// The requested times for a range from `start` to `end` (µs from the asset's start).
    func resolvedTimes(start: Int64, end: Int64?) -> [Int64] {
        var times = times
        if let count { times += ImageTime.evenlySpaced(count: count) }
        if let every, let end { times += ImageTime.every(every, start: start, end: end, limit: Self.maximumCount) }
        if times.isEmpty { times = [.fraction(0.5)] }
        return times.prefix(Self.maximumCount).map { $0.resolved(start: start, end: end) }
    }
}

extension ImageTime: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { self = try ImageTime(parsing: text) } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: error.description)
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .at(let time): try container.encode(TimeRange.formatPrecisely(time))
        case .fraction(let fraction): try container.encode("\(fraction * 100)%")
        case .end: try container.encode("end")
        }
    }
}

/// One image written: its file, its size, and the time asked for vs the frame's time.
public struct ImageFile: Sendable, Hashable, Codable {
    public var name: String
    public var bytes: Int64
    public var width: Int
    public var height: Int
    /// Seconds from the input's start.
    public var requestedTime: Double
    /// Seconds from the input's start: the presentation time of the frame shown.
    public var actualTime: Double
}

/// Takes the images of `ThumbnailOptions` and writes them into a directory as
/// `thumb-001.jpg`… (in the order of their times), all or none.
public final class ThumbnailSession: @unchecked Sendable {
    public let generator: ImageGenerator
    public let options: ThumbnailOptions
    private let steps = StepProgress()

    /// `input_unsupported` without a video track; `encode_failed` if this FFmpeg lacks the
    /// format's encoder.
    public init(asset: Asset, options: ThumbnailOptions, timeRange: TimeRange) throws(MediaError) {
        try options.check()
        try asset.limits.checkDuration(of: asset, timeRange, what: "the thumbnails' range of")
        try options.format.requireEncoder()
        generator = try ImageGenerator(asset: asset)
        generator.timeRange = timeRange
        generator.maximumSize = options.maximumSize
        generator.toleranceBefore = options.toleranceBefore ?? .max
        generator.toleranceAfter = options.toleranceAfter ?? .max
        generator.format = options.format
        try generator.checkImageSize()
        self.options = options
    }

    /// Whether `name` is one of a thumbnail set's files (`thumb-001.jpg`…, any image format).
    @Sendable public static func isSetFile(_ name: String) -> Bool {
        guard name.hasPrefix("thumb-"), let dot = name.lastIndex(of: ".") else { return false }
        let number = name[name.index(name.startIndex, offsetBy: 6)..<dot]
        let ext = name[name.index(after: dot)...]
        return !number.isEmpty && number.allSatisfy { $0.isASCII && $0.isNumber }
            && ImageFormat.allCases.contains { $0.rawValue == ext }
    }

    /// 0…1: images done of those asked for.
    public var progress: Double { steps.fraction }

    public func cancel() { generator.cancelAllImageGeneration() }

    /// Generates every image and writes them into `directory`, all or none; throws the first
    /// failure (nothing is left behind then).
    public func run(directory: String) throws(MediaError) -> [ImageFile] {
        let files = try StagedFiles(directory: directory)
        files.replacesSet = Self.isSetFile
        let images = try run(into: files)
        _ = try files.commit()
        return images
    }

    /// Generates every image into `files` (staged: the caller commits or discards them).
    public func run(into files: StagedFiles) throws(MediaError) -> [ImageFile] {
        let asset = generator.asset
        if files.budget == nil { files.budget = OutputBudget(limit: asset.limits.maxOutputBytes) }
        let range = try generator.timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        let times = options.resolvedTimes(start: range.start, end: range.end ?? asset.duration)
        steps.start(total: times.count)
        let digits = max(3, String(times.count).count)
        var images: [ImageFile] = []
        var failure: MediaError?
        try generator.generateImages(at: times) { image in
            guard failure == nil else { return }
            guard image.result == .succeeded, let data = image.data, let size = image.size else {
                failure = image.error ?? MediaError.cancelled()
                return
            }
            let number = String(images.count + 1)
            let name =
                "thumb-\(String(repeating: "0", count: max(0, digits - number.count)))\(number).\(options.format)"
            do throws(MediaError) {
                try files.write(name, data)
            } catch {
                failure = error
                generator.cancelAllImageGeneration()
                return
            }
            images.append(
                ImageFile(
                    name: name,
                    bytes: Int64(data.count),
                    width: size.width,
                    height: size.height,
                    requestedTime: Double(image.requestedTime) / 1e6,
                    actualTime: Double(image.actualTime ?? 0) / 1e6
                )
            )
            steps.step()
        }
        if let failure {
            files.discard()
            throw failure
        }
        return images
    }
}
