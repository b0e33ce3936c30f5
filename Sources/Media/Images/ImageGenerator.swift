import CFFmpeg
import JobctlCore

/// One image the generator was asked for (`AVAssetImageGenerator`'s completion handler
/// arguments): the time asked for, the time of the frame actually used, and the image.
public struct GeneratedImage: Sendable {
    public enum Result: String, Sendable, Hashable, Codable {
        case succeeded, failed, cancelled
    }

    /// Where in the request list this time was (results come in time order).
    public var requestIndex: Int
    /// Microseconds from the asset's start, as requested.
    public var requestedTime: Int64
    /// Microseconds from the asset's start: the presentation time of the frame in the image.
    public var actualTime: Int64?
    public var result: Result
    /// The encoded image (`format`), when it succeeded.
    public var data: [UInt8]?
    public var size: PictureSize?
    public var error: MediaError?
}

/// Images of an asset's video at given times (`AVAssetImageGenerator`).
///
/// Times are sorted and served in one forward pass: it seeks only when the next time is far
/// ahead (a keyframe lies between), never back, so ten images of a two-hour file decode ten
/// short stretches, not the file. Times past the end (of the asset or of `timeRange`) get the
/// last frame; `actualTime` says which frame every image shows.
///
/// Sendable: configure it, then call `generateImages` from one thread; `cancelAllImageGeneration`
/// may be called from any thread (it sets atomic flags).
public final class ImageGenerator: @unchecked Sendable {
    public let asset: Asset
    /// The largest image (display orientation): fits inside, aspect ratio kept, never
    /// upscaled; 0 on an axis leaves that axis free. `nil`: the displayed size.
    public var maximumSize: PictureSize?
    /// How far before a requested time the frame may be (µs). `Int64.max` (the default): any
    /// frame up to the time, so the keyframe a seek lands on is taken at once (fast). 0 with
    /// `toleranceAfter` 0: exactly the frame displayed at the time.
    public var toleranceBefore: Int64 = .max
    /// How far after a requested time the frame may be (µs). Default `Int64.max`.
    public var toleranceAfter: Int64 = .max
    /// Whether the track's display matrix is applied (a phone video upright). On by default,
    /// unlike AVFoundation: a server's thumbnails are looked at, not composited.
    public var appliesPreferredTrackTransform = true
    public var format: ImageFormat = .jpeg
    /// Limits every image to this part of the asset; times outside it are clamped into it.
    public var timeRange: TimeRange = .all

    private let cancelled = AtomicFlag()
    /// Seeks made by the last run (for tests: one forward pass).
    public private(set) var seekCount = 0

    /// Claims the asset (it is read by this generator only). `input_unsupported` when it has no
    /// video track (audio-only files, a cover picture alone).
    public init(asset: Asset) throws(MediaError) {
        guard let video = asset.primaryVideoTrack else {
            throw MediaError(.inputUnsupported, "\(asset.displayName) has no video track to take images from")
        }
        if video.isEncrypted == true {
            throw MediaError(
                .inputUnsupported,
                "video track \(video.index) of \(asset.displayName) is encrypted (DRM): jobctl cannot decrypt it"
            )
        }
        guard asset.claimForReading() else {
            throw MediaError(.internalError, "\(asset.displayName) is already being read by another reader")
        }
        self.asset = asset
    }

    /// Sets both tolerances to zero: every image is the frame displayed at its time.
    public func requireExactFrames() {
        toleranceBefore = 0
        toleranceAfter = 0
    }

    /// Stops the generation; what is not done yet is reported `cancelled`.
    public func cancelAllImageGeneration() {
        cancelled.set()
        asset.interrupt.set()
    }

    /// The size images will have.
    public var imageSize: PictureSize { PictureConverter.imageSize(display: displaySize, maximum: maximumSize) }

    /// The largest image side, and picture, an image may have (the sprite's own limits).
    public static let maximumSide = 16384
    public static let maximumPixels = 64_000_000

    /// `limit_exceeded` when `imageSize` is too large to make: an extreme pixel aspect ratio
    /// (100:1 makes a 4096-wide source 409,600 pixels wide) without a `maximumSize` to fit it.
    public func checkImageSize() throws(MediaError) {
        let size = imageSize
        guard
            size.width > Self.maximumSide || size.height > Self.maximumSide
                || size.width * size.height > Self.maximumPixels
        else { return }
        let aspect = asset.primaryVideoTrack?.sampleAspectRatio.map { " (its pixel aspect ratio is \($0))" } ?? ""
        throw MediaError(
            .limitExceeded,
            "an image of \(asset.displayName) would be \(size.width)x\(size.height)\(aspect), over \(Self.maximumSide) pixels a side or \(Self.maximumPixels / 1_000_000) megapixels: give a size (--size 1280x)"
        )
    }

    /// Generates an image for each of `times` (µs from the asset's start) and calls `handler`
    /// with each result, in time order, on the calling thread. Blocks until done. Throws only
    /// when nothing can be generated at all (the range is outside the asset, the track cannot
    /// be decoded); a failure midway marks the rest `failed`, a cancellation `cancelled`.
    public func generateImages(at times: [Int64], handler: (GeneratedImage) -> Void) throws(MediaError) {
        let format = format
        try generatePictures(at: times) { request, actualTime, picture throws(MediaError) in
            let data = try ImageEncoder.encode(picture, as: format)
            handler(
                GeneratedImage(
                    requestIndex: request.index,
                    requestedTime: request.time,
                    actualTime: actualTime,
                    result: .succeeded,
                    data: data,
                    size: PictureSize(width: Int(picture.width), height: Int(picture.height))
                )
            )
        } failed: { request, error in
            handler(
                GeneratedImage(
                    requestIndex: request.index,
                    requestedTime: request.time,
                    result: error.isCancellation ? .cancelled : .failed,
                    error: error.isCancellation ? nil : error
                )
            )
        }
    }

    /// One requested time and its place in the request list.
    struct Request {
        var index: Int
        var time: Int64
    }

    /// The engine under `generateImages` and storyboards: converted pictures (`format`'s pixel
    /// format and `imageSize`, unless given) instead of encoded images.
    func generatePictures(
        at times: [Int64],
        pixelFormat: AVPixelFormat? = nil,
        size: PictureSize? = nil,
        deliver: (Request, Int64, Frame) throws(MediaError) -> Void,
        failed: (Request, MediaError) -> Void
    ) throws(MediaError) {
        let track = asset.primaryVideoTrack!
        let range = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        let rangeEnd = range.end ?? asset.duration
        let requests = times.enumerated().map { Request(index: $0.offset, time: max(0, $0.element)) }
            .sorted { ($0.time, $0.index) < ($1.time, $1.index) }
        // Each time clamped into the range (the last microsecond before its end).
        let targets = requests.enumerated().map { position, request in
            var time = max(request.time, range.start)
            if let rangeEnd { time = min(time, max(range.start, rangeEnd - 1)) }
            return FrameLocator.Target(id: position, time: asset.startTime + time)
        }
        let locator = try FrameLocator(
            asset: asset,
            track: track,
            toleranceBefore: toleranceBefore,
            toleranceAfter: toleranceAfter,
            start: asset.startTime + range.start,
            end: range.end.map { asset.startTime + $0 }
        )
        if size == nil { try checkImageSize() }
        let converter = try PictureConverter(
            size: size ?? imageSize,
            rotation: appliesPreferredTrackTransform ? track.rotation ?? 0 : 0,
            format: pixelFormat ?? format.pixelFormat,
            color: try ColorPath.picture(track.color, track: "video track \(track.index) of \(asset.displayName)")
        )
        var done = 0
        defer { seekCount = locator.seekCount }
        do {
            let cancelled = cancelled
            try locator.locate(targets) {
                cancelled.isSet
            } deliver: { target, frame, time throws(MediaError) in
                let picture = try converter.convert(frame)
                try deliver(requests[target.id], time - asset.startTime, picture)
                done = target.id + 1
            }
        } catch {
            let reported = cancelled.isSet ? MediaError.cancelled() : error
            for request in requests[done...] { failed(request, reported) }
        }
    }

    /// The displayed size of the video track: square pixels, rotation applied if it is.
    private var displaySize: (width: Double, height: Double) {
        let track = asset.primaryVideoTrack!
        let stream = asset.input.stream(track.index)
        return Fit.displaySize(
            width: track.width ?? 0,
            height: track.height ?? 0,
            sar: AssetTrack.sampleAspect(of: stream),
            rotation: appliesPreferredTrackTransform ? track.rotation ?? 0 : 0
        )
    }
}
