/// Which tracks an export carries and how: the preset applied to an asset (docs/spec.md §3).
///
/// All audio tracks and the first video track (not a cover picture) are carried, as
/// `AVAssetExportSession` does; subtitle tracks only by `passthrough`, when the container
/// holds them. Everything that makes a preset inapplicable is found here, before any file is
/// written: `preset_incompatible`, or `input_unsupported` when nothing can be read.
public struct ExportPlan: Sendable {
    public struct Track: Sendable {
        public var source: AssetTrack
        /// `nil`: copied.
        public var readerSettings: AssetReaderTrackOutput.Settings?
        public var writerSettings: AssetWriterInput.Settings
    }

    public var tracks: [Track]
    public var format: ContainerFormat

    /// - Parameter part: the whole export, or one part of a split one (`ExportPart`).
    public init(
        asset: Asset,
        preset: Preset,
        format: ContainerFormat,
        part: ExportPart = .whole,
        cut: SegmentCut? = nil,
        videoThreads: Int? = nil
    ) throws(MediaError) {
        self.format = format
        let name = asset.displayName
        let video = asset.primaryVideoTrack
        let audio = asset.audioTracks
        guard video != nil || !audio.isEmpty else {
            throw MediaError(.inputUnsupported, "\(name) has no audio or video track")
        }
        var tracks: [Track] = []

        if let settings = preset.video, format.holdsVideo, let video, part != .audio {
            var track = try ExportPlan.videoTrack(video, settings: settings, asset: asset, format: format)
            if let videoThreads, case .video(var encoding) = track.writerSettings {
                encoding.threads = videoThreads
                track.writerSettings = .video(encoding)
            }
            if part == .video, case .video(var encoding) = track.writerSettings {
                encoding.stitchable = true
                encoding.cut = cut
                track.writerSettings = .video(encoding)
            }
            tracks.append(track)
        }
        if let settings = preset.audio, part != .video {
            for track in audio {
                tracks.append(try ExportPlan.audioTrack(track, settings: settings, asset: asset, format: format))
            }
        }
        if preset.isPassthrough {
            for track in asset.tracks
            where track.mediaType == .subtitle && OutputFormatCapabilities.canHold(track, in: format) {
                tracks.append(Track(source: track, readerSettings: nil, writerSettings: .passthrough(track: track)))
            }
        }

        if let encrypted = tracks.first(where: { $0.source.isEncrypted == true })?.source {
            throw MediaError(
                .inputUnsupported,
                "\(encrypted.mediaType) track \(encrypted.index) of \(name) is encrypted (DRM): jobctl cannot decrypt it; export from the clear master"
            )
        }
        guard !tracks.isEmpty else {
            if preset.video == nil || !format.holdsVideo {
                throw MediaError(
                    .presetIncompatible,
                    "\(name) has no audio track, and preset '\(preset.name)' (\(format.rawValue)) keeps only audio"
                )
            }
            throw MediaError(.presetIncompatible, "\(name) has no video track and preset '\(preset.name)' drops audio")
        }
        self.tracks = tracks
    }

    /// `track` copied as it is (passthrough), if `format` can hold its codec.
    private static func copiedTrack(
        _ track: AssetTrack,
        _ kind: String,
        format: ContainerFormat
    ) throws(MediaError) -> Track {
        guard OutputFormatCapabilities.canHold(track, in: format) else {
            throw MediaError(
                .presetIncompatible,
                "\(track.codec) \(kind) cannot be copied into \(format.rawValue); use --format mov or a re-encoding preset"
            )
        }
        return Track(source: track, readerSettings: nil, writerSettings: .passthrough(track: track))
    }

    private static func videoTrack(
        _ track: AssetTrack,
        settings: Preset.Video,
        asset: Asset,
        format: ContainerFormat
    ) throws(MediaError) -> Track {
        try requireKnownCodec(track, asset: asset)
        if settings.codec == .copy { return try copiedTrack(track, "video", format: format) }
        try requireDecodable(track, asset: asset)
        guard let encoder = settings.codec.encoderName, CodecEncoder.isAvailable(encoder) else {
            throw MediaError(
                .presetIncompatible,
                "this FFmpeg build has no \(settings.codec.encoderName ?? settings.codec.rawValue) encoder"
            )
        }
        guard let width = track.width, let height = track.height, width > 0, height > 0 else {
            throw MediaError(
                .inputUnsupported,
                "video track \(track.index) of \(asset.displayName) has no picture size"
            )
        }
        let sar = track.sampleAspectRatio.flatMap(parseRatio) ?? (1, 1)
        let display = Fit.displaySize(width: width, height: height, sar: sar, rotation: track.rotation ?? 0)
        let size = Fit.outputSize(display: display, box: settings.box)
        let color = try ColorPath.decide(
            track.color,
            codec: settings.codec,
            mode: settings.hdr ?? .auto,
            track: "video track \(track.index) of \(asset.displayName)"
        )
        var encoding = AssetWriterInput.VideoEncoding(
            codec: settings.codec,
            size: size,
            bitrate: settings.bitrate,
            crf: settings.crf,
            encoderPreset: settings.encoderPreset,
            source: color == .keep(.pq) ? asset.withPictureMetadata(track) : track
        )
        encoding.color = color
        return Track(
            source: track,
            readerSettings: .video(size: size, color: color),
            writerSettings: .video(encoding)
        )
    }

    private static func audioTrack(
        _ track: AssetTrack,
        settings: Preset.Audio,
        asset: Asset,
        format: ContainerFormat
    ) throws(MediaError) -> Track {
        try requireKnownCodec(track, asset: asset)
        if settings.codec == .copy { return try copiedTrack(track, "audio", format: format) }
        try requireDecodable(track, asset: asset)
        let sourceChannels = max(1, track.channels ?? 2)
        let channels = min(settings.channels ?? sourceChannels, sourceChannels)
        let sampleRate = settings.sampleRate ?? nearestAACRate(track.sampleRate ?? 44100)
        let encoding = AssetWriterInput.AudioEncoding(
            sampleRate: sampleRate,
            channels: channels,
            bitrate: settings.bitrate,
            source: track
        )
        return Track(
            source: track,
            readerSettings: .audio(sampleRate: sampleRate, channels: channels),
            writerSettings: .audio(encoding)
        )
    }

    /// A track whose codec FFmpeg could not even name: usually a damaged header.
    private static func requireKnownCodec(_ track: AssetTrack, asset: Asset) throws(MediaError) {
        guard track.codec == "none" else { return }
        throw MediaError(
            .inputUnsupported,
            "\(track.mediaType) track \(track.index) of \(asset.displayName) has an unknown codec (is its header damaged?)"
        )
    }

    private static func requireDecodable(_ track: AssetTrack, asset: Asset) throws(MediaError) {
        guard track.isDecodable else {
            throw MediaError(
                .inputUnsupported,
                "\(track.mediaType) track \(track.index) of \(asset.displayName) (\(track.codec)) cannot be decoded"
            )
        }
    }

    private static func parseRatio(_ text: String) -> (num: Int, den: Int)? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let num = Int(parts[0]), let den = Int(parts[1]) else { return nil }
        return (num, den)
    }

    private static func nearestAACRate(_ rate: Int) -> Int {
        Preset.aacSampleRates.min { abs($0 - rate) < abs($1 - rate) } ?? 44100
    }
}

extension Preset {
    /// Why this preset cannot export `asset` (`preset_incompatible` or `input_unsupported`), or
    /// `nil` when it can: `AVAssetExportSession.exportPresets(compatibleWith:)`.
    public func incompatibility(with asset: Asset, format: ContainerFormat? = nil) -> MediaError? {
        do {
            _ = try ExportPlan(asset: asset, preset: self, format: format ?? self.format)
            return nil
        } catch {
            return error
        }
    }
}
