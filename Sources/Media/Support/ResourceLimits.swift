/// What one export may cost, whatever its input claims (docs/spec.md §7). Checked before decoding
/// starts (from the container's headers) and again while reading (decoded pictures, the
/// demuxed timeline, bytes written); an export over a limit fails with `limit_exceeded`, whose
/// message names the limit and the value.
///
/// The defaults suit a worker with a few GB of memory per job (docs/operations.md lists what
/// each implies); raise them for 8K sources or day-long recordings.
public struct ResourceLimits: Sendable, Hashable {
    /// The largest decoded picture, in pixels (width × height). Memory for decoding and
    /// encoding grows with it: x264 holds dozens of pictures for its lookahead.
    public var maxPixels: Int
    /// The longest output, in microseconds (the range, or the input from its start).
    public var maxDuration: Int64
    /// The most streams an input may have (each carried one costs a thread and a codec).
    public var maxTracks: Int
    /// The largest output file, in bytes.
    public var maxOutputBytes: Int64

    public init(
        maxPixels: Int = ResourceLimits.default.maxPixels,
        maxDuration: Int64 = ResourceLimits.default.maxDuration,
        maxTracks: Int = ResourceLimits.default.maxTracks,
        maxOutputBytes: Int64 = ResourceLimits.default.maxOutputBytes
    ) {
        self.maxPixels = maxPixels
        self.maxDuration = maxDuration
        self.maxTracks = maxTracks
        self.maxOutputBytes = maxOutputBytes
    }

    private init(pixels: Int, duration: Int64, tracks: Int, bytes: Int64) {
        maxPixels = pixels
        maxDuration = duration
        maxTracks = tracks
        maxOutputBytes = bytes
    }

    /// 8192×4320 pixels (8K UHD and DCI 8K fit, as phones record them; 16K and the hostile
    /// 65536² do not), 12 hours, 64 streams, 64 GiB. An 8K export at `highest` peaks near 4 GB
    /// (docs/operations.md, "Resource limits").
    public static let `default` = ResourceLimits(
        pixels: 8192 * 4320,
        duration: 12 * 3600 * 1_000_000,
        tracks: 64,
        bytes: 64 << 30
    )

    /// Limits that never bind (tests, and tools that only inspect).
    public static let none = ResourceLimits(
        pixels: Int(Int32.max),
        duration: Int64.max / 4,
        tracks: 100_000,
        bytes: Int64.max / 4
    )

    func pictureTooLarge(width: Int, height: Int, what: String) -> MediaError? {
        guard width > 0, height > 0, width * height > maxPixels else { return nil }
        return MediaError(
            .limitExceeded,
            "\(what) is \(width)x\(height) (\(width * height) pixels), over the limit of \(maxPixels) pixels (--max-pixels, JOBCTL_MAX_PIXELS)"
        )
    }

    func tooManyTracks(_ count: Int, in name: String) -> MediaError? {
        guard count > maxTracks else { return nil }
        return MediaError(
            .limitExceeded,
            "\(name) has \(count) streams, over the limit of \(maxTracks) (--max-tracks, JOBCTL_MAX_TRACKS)"
        )
    }

    /// `limit_exceeded` when the part of `asset` that `timeRange` selects lasts longer than
    /// `maxDuration` (by the headers; unknown durations are bounded while reading). `what`
    /// names the work ("the waveform of").
    func checkDuration(of asset: Asset, _ timeRange: TimeRange, what: String) throws(MediaError) {
        guard
            let duration = try? timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
                .expectedDuration
        else { return }
        if let error = tooLong(
            duration,
            what: "\(what) \(asset.displayName)\(timeRange == .all ? "" : " (range \(timeRange))")"
        ) {
            throw error
        }
    }

    func tooLong(_ duration: Int64, what: String) -> MediaError? {
        guard duration > maxDuration else { return nil }
        return MediaError(
            .limitExceeded,
            "\(what) lasts \(TimeRange.format(duration)), over the limit of \(TimeRange.format(maxDuration)) (--max-duration, JOBCTL_MAX_DURATION)"
        )
    }

    func outputTooLarge(_ bytes: Int64, path: String) -> MediaError {
        MediaError(
            .limitExceeded,
            "\(path) would be larger than \(maxOutputBytes) bytes, the limit on output size (--max-output-size, JOBCTL_MAX_OUTPUT_SIZE); \(bytes) bytes written so far"
        )
    }
}
