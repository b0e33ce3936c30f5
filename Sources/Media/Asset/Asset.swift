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
    /// The headers say the length is indeterminate (a fragmented MP4 with all-ones durations):
    /// `duration` is what the tracks that do say give, or `nil`.
    public let durationIsIndeterminate: Bool
    /// What an export of this asset should say it could not do as asked (a DASH manifest with
    /// several periods, of which FFmpeg reads one).
    public let warnings: [String]
    /// For a manifest (several variants of one presentation), the tracks of the one variant
    /// an export reads: `nil` for other containers, where every track counts.
    let variant: Set<Int>?
    public let bitrate: Int?
    /// Bytes, for local files.
    public let fileSize: Int64?
    public let tracks: [AssetTrack]

    /// What reading and exporting this asset may cost.
    public let limits: ResourceLimits

    let input: InputFile
    let interrupt: AtomicFlag
    /// The packets its decoders failed on (an asset is read once).
    let decodeDamage = DecodeDamage()
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
        let guarding = InputGuard(url: url, shown: MediaLocation.displayed(location), interrupt: interrupt)
        let manifest = MediaLocation.isRemote(url) ? nil : try LocalManifest.read(String(url.dropFirst(5)))
        let input: InputFile
        do {
            do {
                input = try InputFile(
                    url: url,
                    limits: limits,
                    guarding: guarding,
                    dashManifest: manifest?.checked
                )
            } catch let error as FFError {
                // Probing guessed a refused format: what the file's name says, if that reads it
                // (the junk is then skipped the way a player skips it: by finding the sync).
                let detail = FFmpegLog.takeLastError()
                guard detail?.contains("not on whitelist") == true, !MediaLocation.isRemote(location),
                    let format = InputFile.demuxer(forExtension: (location as NSString).pathExtension),
                    let retried = try? InputFile(
                        url: url,
                        limits: limits,
                        guarding: guarding,
                        format: format
                    )
                else {
                    FFmpegLog.restoreLastError(detail)
                    throw error
                }
                _ = FFmpegLog.takeLastError()
                input = retried
            }
        } catch let error as FFError {
            let detail = FFmpegLog.takeLastError()
            // A manifest that names what it may not: that, rather than what failed after it.
            if let refused = guarding.failure(
                format: InputFile.probeFormatName(url.hasPrefix("file:") ? String(url.dropFirst(5)) : url)
            ) {
                throw refused
            }
            if manifest?.checked != nil, detail?.contains("not on whitelist") == true {
                throw MediaError(
                    .inputUnsupported,
                    "\(MediaLocation.displayed(location)) is a DASH manifest (dash) with a segment jobctl does not read: one is another manifest or in a refused format",
                    detail: detail
                )
            }
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
        if let refused = input.refusal { throw refused }
        warnings = manifest?.warnings ?? []
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
        variant = ["hls", "dash"].contains(input.formatName) ? Self.variant(of: input, tracks) : nil
        // A picture whose size only its decoder knows (WebP, some JPEGs) was not decoded when
        // it is over the limit: the size is then in FFmpeg's words only.
        let logged = FFmpegLog.takeLastError()
        FFmpegLog.restoreLastError(logged)
        if let logged, logged.contains("exceeds specified max pixel count"),
            tracks.contains(where: { $0.mediaType == .video && ($0.width ?? 0) == 0 })
        {
            let size =
                logged.range(of: #"Picture size [0-9]+x[0-9]+"#, options: .regularExpression).map {
                    String(logged[$0].dropFirst("Picture size ".count))
                } ?? "larger"
            throw MediaError(
                .limitExceeded,
                "\(MediaLocation.displayed(location)) holds a \(size) picture, over the limit of \(limits.maxPixels) pixels (--max-pixels, JOBCTL_MAX_PIXELS)"
            )
        }
        // A fragmented MP4 whose headers say "indeterminate": the length is known only from its
        // media, so it is unknown here (what the file holds is exported, and the limits are
        // applied to what is read) rather than the 143,165 s FFmpeg makes of it.
        let indeterminate = (0..<input.streamCount).contains {
            AssetTrack.isIndeterminate(input.stream($0).pointee.duration)
        }
        durationIsIndeterminate = indeterminate
        if context.duration != noPTS && context.duration > 0 && !indeterminate {
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
        tracks.first { $0.mediaType == .video && $0.isAttachedPicture != true && variant?.contains($0.index) != false }
    }

    public var audioTracks: [AssetTrack] {
        tracks.filter { $0.mediaType == .audio && variant?.contains($0.index) != false }
    }

    /// The variant a player on a good connection would pick: the video with the most pixels
    /// (then the highest bitrate), and the highest-bitrate audio that plays with it (an HLS
    /// variant is a program of its own; a DASH manifest has one program for everything).
    private static func variant(of input: InputFile, _ tracks: [AssetTrack]) -> Set<Int> {
        func bitrate(_ track: AssetTrack) -> Int {
            let metadata = av_dict_get(input.stream(track.index).pointee.metadata, "variant_bitrate", nil, 0)
            return metadata.flatMap { Int(String(cString: $0.pointee.value)) } ?? track.bitrate ?? 0
        }
        let programs: [Set<Int>] = (0..<Int(input.context.pointee.nb_programs)).compactMap { number in
            guard let program = input.context.pointee.programs[number]?.pointee else { return nil }
            return Set((0..<Int(program.nb_stream_indexes)).map { Int(program.stream_index[$0]) })
        }
        let video = tracks.filter { $0.mediaType == .video && $0.isAttachedPicture != true }.max {
            (($0.width ?? 0) * ($0.height ?? 0), bitrate($0)) < (($1.width ?? 0) * ($1.height ?? 0), bitrate($1))
        }
        let together = video.flatMap { video in programs.first { $0.contains(video.index) } }
        let allAudio = tracks.filter { $0.mediaType == .audio }
        let withVideo = allAudio.filter { together?.contains($0.index) != false }
        let audio = (withVideo.isEmpty ? allAudio : withVideo).max { bitrate($0) < bitrate($1) }
        return Set([video?.index, audio?.index].compactMap(\.self))
    }

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
                    "\(location) is in a format jobctl does not read\(format): image sequences, concat lists and DASH manifests read from a URL are refused",
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
            return try CodecDecoder(
                stream: input.stream(track.index),
                maxPixels: limits.maxPixels,
                damage: decodeDamage
            )
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
