import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

/// An opened input and its tracks (`AVAsset`): what `jobctl probe` shows and what an
/// `AssetReader` reads.
///
/// Loading reads the container header and probes the streams; nothing is decoded. An asset is
/// read by at most one `AssetReader`.
///
/// Sendable: immutable after init but for `claimed` (atomic); `input` is used only by the one
/// reader that claimed the asset, and `interrupt` is atomic.
public final class Asset: @unchecked Sendable {
    /// The input as given (a path or an `http(s)://` URL).
    public let location: String
    /// FFmpeg's demuxer name (`mov,mp4,m4a,3gp,3g2,mj2`, `mpegts`, …).
    public let container: String
    public let containerLongName: String?
    /// Microseconds; `nil` when the container does not say.
    public let duration: Int64?
    /// Microseconds: the timestamp of the asset's first frame. Ranges are relative to it.
    public let startTime: Int64
    /// Whether `duration` is only a guess from the bitrate (then an export may end elsewhere
    /// without the input being damaged).
    public let durationIsEstimate: Bool
    public let bitrate: Int?
    /// Bytes, for local files.
    public let fileSize: Int64?
    public let tracks: [AssetTrack]

    /// What reading and exporting this asset may cost.
    public let limits: ResourceLimits

    let input: InputFile
    let interrupt: AtomicFlag
    private let claimed = Atomic(false)

    /// Opens `location`. Errors: `input_not_found`, `input_unreadable`, `input_unsupported`,
    /// and `limit_exceeded` for more streams than `limits` allow (probing decodes no picture
    /// larger than they allow either).
    public init(location: String, limits: ResourceLimits = .default) throws(MediaError) {
        FFmpegLog.install()
        self.location = location
        self.limits = limits
        let url = try Asset.ffmpegURL(for: location)
        let interrupt = AtomicFlag()
        let input: InputFile
        do {
            input = try InputFile(url: url, interrupt: interrupt, limits: limits)
        } catch let error as FFError {
            let detail = FFmpegLog.takeLastError()
            if let detail, detail.contains("max_streams") {
                throw MediaError(
                    .limitExceeded,
                    "\(MediaLocation.displayed(location)) has more than \(limits.maxTracks) streams, the limit (--max-tracks, JOBCTL_MAX_TRACKS)"
                )
            }
            throw Asset.openError(error, location: location, detail: detail)
        } catch {
            throw MediaError(.internalError, "opening \(location): \(error)")
        }
        self.input = input
        self.interrupt = interrupt
        let context = input.context.pointee
        container = input.formatName
        containerLongName = input.formatLongName
        startTime = context.start_time != noPTS ? context.start_time : 0
        if let tooMany = limits.tooManyTracks(input.streamCount, in: MediaLocation.displayed(location)) {
            throw tooMany
        }
        tracks = (0..<input.streamCount).map { AssetTrack(stream: input.stream($0)) }
        if context.duration != noPTS && context.duration > 0 {
            duration = context.duration
        } else {
            let longest = tracks.compactMap(\.duration).max()
            duration = longest.map { Int64($0 * 1_000_000) }
        }
        durationIsEstimate = context.duration_estimation_method == AVFMT_DURATION_FROM_BITRATE
        bitrate = context.bit_rate > 0 ? Int(context.bit_rate) : nil
        fileSize =
            url.hasPrefix("file:")
            ? (try? FileManager.default.attributesOfItem(atPath: String(url.dropFirst(5)))[.size] as? NSNumber)?
                .int64Value : nil
    }

    /// The name used in messages: the file's name for paths.
    public var displayName: String {
        MediaLocation.isRemote(location) ? MediaLocation.displayed(location) : (location as NSString).lastPathComponent
    }

    /// Duration in seconds.
    public var durationSeconds: Double? { duration.map { Double($0) / 1_000_000 } }

    /// The track carried as "the first video track" (AVAssetExportSession behaviour): not a
    /// cover picture.
    public var primaryVideoTrack: AssetTrack? {
        tracks.first { $0.mediaType == .video && $0.isAttachedPicture != true }
    }

    public var audioTracks: [AssetTrack] { tracks.filter { $0.mediaType == .audio } }

    /// Marks the asset as read by one reader.
    func claimForReading() -> Bool {
        claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    /// What FFmpeg opens: `http(s)` URLs as they are, everything else as a local file through
    /// `file:` (so a name like `concat:a|b` can never select another protocol).
    static func ffmpegURL(for location: String) throws(MediaError) -> String {
        if MediaLocation.isRemote(location) { return location }
        if location.lowercased().hasPrefix("file://") {
            guard let path = URL(string: location)?.path, !path.isEmpty else {
                throw MediaError(.inputNotFound, "\(location) is not a valid file URL")
            }
            return try ffmpegURL(for: path)
        }
        if let scheme = location.range(of: "://"), !location[..<scheme.lowerBound].contains("/") {
            throw MediaError(.inputUnsupported, "\(location): only local files and http(s) URLs can be read")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: location, isDirectory: &isDirectory) else {
            throw MediaError(.inputNotFound, "\(location) does not exist")
        }
        guard !isDirectory.boolValue else {
            throw MediaError(.inputUnreadable, "\(location) is a directory, not a media file")
        }
        guard FileManager.default.isReadableFile(atPath: location) else {
            throw MediaError(.inputUnreadable, "\(location) cannot be read (permission denied)")
        }
        if let size = (try? FileManager.default.attributesOfItem(atPath: location)[.size] as? NSNumber)?.intValue,
            size == 0
        {
            throw MediaError(.inputUnreadable, "\(location) is empty")
        }
        let absolute = location.hasPrefix("/") ? location : FileManager.default.currentDirectoryPath + "/" + location
        return "file:" + absolute
    }

    static func openError(_ error: FFError, location full: String, detail: String?) -> MediaError {
        let location = MediaLocation.displayed(full)
        let detail = detail.map { $0.replacingOccurrences(of: full, with: location) }
        let because = detail.map { " (\($0))" } ?? ""
        let remote = MediaLocation.isRemote(location)
        switch error.code {
        case AVErr.noEntry, AVErr.httpNotFound:
            return MediaError(.inputNotFound, "\(location) does not exist\(because)", detail: error.description)
        case AVErr.accessDenied, AVErr.httpForbidden, AVErr.httpUnauthorized:
            let reason = remote ? "the server refused access" : "permission denied"
            return MediaError(.inputUnreadable, "\(location) cannot be read (\(reason))", detail: error.description)
        case AVErr.exit:
            return MediaError.cancelled()
        case AVErr.httpBadRequest, AVErr.httpOther4xx:
            return MediaError(
                .inputUnreadable,
                "\(location) cannot be read (the server answered \(FFError.message(for: error.code)))",
                detail: error.description
            )
        case let code where remote && AVErr.transientNetwork.contains(code):
            var failure = MediaError(
                .inputUnreadable,
                "\(location) could not be fetched (\(detail ?? FFError.message(for: code))); it will be tried again",
                detail: error.description
            )
            failure.transient = true
            return failure
        default:
            if let detail, detail.contains("not on whitelist") {
                let format = InputFile.probeFormatName(location).map { " (\($0))" } ?? ""
                return MediaError(
                    .inputUnsupported,
                    "\(location) is in a format jobctl does not read\(format): playlists and image sequences are refused",
                    detail: detail
                )
            }
            let what =
                error.operation == "avformat_find_stream_info"
                ? "its streams cannot be probed" : "it is not a media file FFmpeg can read"
            return MediaError(
                .inputUnreadable,
                "\(location): \(what)\(because.isEmpty ? " (\(FFError.message(for: error.code)))" : because)",
                detail: error.description
            )
        }
    }
}

extension Asset {
    /// A decoder for `track`, bound by the asset's picture limit; `input_unsupported` (with
    /// FFmpeg's reason) when there is none.
    func makeDecoder(for track: AssetTrack) throws(MediaError) -> CodecDecoder {
        do {
            return try CodecDecoder(stream: input.stream(track.index), maxPixels: limits.maxPixels)
        } catch {
            let detail = FFmpegLog.takeLastError().map { " (\($0))" } ?? ""
            throw MediaError(
                .inputUnsupported,
                "track \(track.index) (\(track.codec)) cannot be decoded\(detail)",
                detail: "\(error)"
            )
        }
    }
}
