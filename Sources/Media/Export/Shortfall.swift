/// An export that ended before the input's headers say its tracks do (decisions 80 and 157).
///
/// Either the file is damaged (cut, or unreadable from some point on: the export fails with
/// `decode_failed`), or its headers claim more than its media holds: an MP3's Xing or VBRI
/// frame count, a FLAC's STREAMINFO total, an Ogg stream's last granule position. The media
/// decides: when the reading ended cleanly (`AssetReader.endedCleanly`: a plain end of file,
/// no error logged, no packet that failed to decode, no index naming bytes the file does not
/// have), what was read is what the file holds, and the export completes with it and a
/// warning, as the `ffmpeg` CLI does (it says nothing). Damage keeps failing: an MP4 cut in its media data, a FLAC cut in a frame.
enum Shortfall {
    /// The output ends about where the headers say.
    case none
    /// The file is truncated or damaged.
    case damage(MediaError)
    /// The headers overstate the media: what it held was exported, and this is said.
    case overstated(warning: String)

    /// Judges an export of `plan` over `range` that `reader` finished, whose tracks produced
    /// `produced` µs.
    init(produced: Int64, range: ResolvedRange, plan: ExportPlan, reader: AssetReader) {
        let asset = reader.asset
        // Where the carried tracks end by their headers (an m4a of a file with short audio is fine).
        let ends = plan.tracks.map { track -> Int64? in
            guard let duration = track.source.duration else { return nil }
            return Int64(((track.source.startTime ?? 0) + duration) * 1_000_000) - asset.startTime
        }
        // Where the media should end: by the headers, capped by the range. When the headers do
        // not say (an indeterminate fragmented MP4), the file holds what it holds: no shortfall.
        guard var expectedEnd = ends.contains(nil) ? asset.duration : ends.compactMap({ $0 }).max() else {
            self = .none
            return
        }
        if let end = range.end { expectedEnd = min(expectedEnd, end) }
        let missing = expectedEnd - range.start - produced
        let readError = reader.inputEndedEarly != nil
        let short =
            (readError && missing > 500_000)
            || (!asset.durationIsEstimate && missing > max(1_000_000, (expectedEnd - range.start) / 10))
        // A range that starts where the file has nothing, though its headers or estimate say otherwise.
        let pastTheMedia = produced == 0 && range.start > 0 && missing > 0
        guard short || pastTheMedia else {
            self = .none
            return
        }
        let reached = TimeRange.format(range.start + produced)
        let claimed = TimeRange.format(expectedEnd)
        guard reader.endedCleanly else {
            let detail = reader.lastDemuxError.map { " (\($0))" } ?? ""
            self =
                short
                ? .damage(
                    MediaError(
                        .decodeFailed,
                        "\(asset.displayName) ends at \(reached) although its tracks last until \(claimed): the file is truncated or damaged\(detail)"
                    )
                ) : .none
            return
        }
        let says =
            asset.durationIsEstimate ? "FFmpeg estimates from its size that it lasts" : "its headers say it lasts"
        guard produced > 0 || range.start == 0 else {
            // Nothing at or after the range's start: the range is past what the file holds.
            self = .damage(
                MediaError(
                    .rangeOutOfBounds,
                    "\(asset.displayName) holds no media at or after \(TimeRange.format(range.start)), the start of the range: \(says) until \(claimed), but its media ends earlier (read to the end without an error)"
                )
            )
            return
        }
        self = .overstated(
            warning:
                "\(asset.displayName): \(says) until \(claimed), but its media ends at \(reached) (read to the end without an error): exported what it holds"
        )
    }
}
