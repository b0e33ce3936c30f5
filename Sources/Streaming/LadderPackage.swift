import Foundation

/// A ladder's playlists, manifest and report, made from its CMAF files as written (issue 29).
///
/// The ladder is flat, one directory (or one object prefix) for everything: rendition `720p`
/// is `720p-init.mp4` and `720p-00001.m4s`…, its playlists `720p.m3u8` and
/// `720p-iframes.m3u8`; beside them `master.m3u8` and `manifest.mpd`. Every number that goes
/// into a playlist (durations, sizes, byte ranges, CODECS, bandwidths) is measured from those
/// files (`FragmentedMP4`), and the rules are checked on the result (`StreamingRules`).
/// Writing the text files is the caller's (segments first, playlists last).
public enum LadderPackage {
    /// A rendition's files, by their names in the ladder.
    public struct Rendition: Sendable, Hashable {
        public var name: String
        public var initialization: String
        /// The segment files, in order, named `PREFIX%0Nd.m4s` with consecutive numbers.
        public var segments: [String]
        public var frameRate: Double?

        public init(name: String, segments: [String], frameRate: Double? = nil) {
            self.name = name
            self.initialization = "\(name)-init.mp4"
            self.segments = segments
            self.frameRate = frameRate
        }

        /// The media playlist's name.
        public var playlist: String { "\(name).m3u8" }
        public var iFramesPlaylist: String { "\(name)-iframes.m3u8" }
    }

    /// The text files to write, by path under the root, and what the rules found.
    public struct Package: Sendable {
        public var files: [String: String]
        public var findings: [StreamingRules.Finding]
        /// Declared and measured bandwidth per video rendition, for the job's result.
        public var bandwidths: [String: (declared: Int, measuredPeak: Int, measuredAverage: Int)]
        /// Per rendition (audio included): CODECS as the bitstream says, and the segment count.
        public var codecs: [String: String] = [:]
        public var segmentCounts: [String: Int] = [:]
        /// The longest rendition's Σ EXTINF, seconds.
        public var duration: Double = 0
    }

    struct Measured {
        var rendition: Rendition
        var track: FragmentedMP4.Track
        var media: HLSPlaylists.Media
        var starts: [Double]
        var startsWithIDR: [Bool]
        var ticks: [Int64]
        var firstTick: Int64
        var frameDuration: Double
        /// How long the media is shown: from its first picture (or sound) to where the last ends.
        var shownDuration: Double
    }

    /// The package of a ladder in the directory `root`.
    public static func package(root: String, video: [Rendition], audio: Rendition?) throws -> Package {
        try package(video: video, audio: audio) { name in
            Array(try Data(contentsOf: URL(fileURLWithPath: (root as NSString).appendingPathComponent(name))))
        }
    }

    /// The package of a ladder whose files `read` gives by name.
    public static func package(
        video: [Rendition],
        audio: Rendition?,
        read: (String) throws -> [UInt8]
    ) throws -> Package {
        let videos = try video.map { try measure($0, read: read) }
        let sound = try audio.map { try measure($0, read: read) }
        let all = videos + (sound.map { [$0] } ?? [])
        // At least 1: a playlist of less than half a second still has a whole-second target.
        let target = max(1, all.map(\.media.targetDuration).max() ?? 0)
        var files: [String: String] = [:]
        for measured in all {
            files[measured.rendition.playlist] = HLSPlaylists.media(measured.media, target: target)
        }
        for measured in videos {
            files[measured.rendition.iFramesPlaylist] = HLSPlaylists.iFrames(measured.media, target: target)
        }
        let variants = videos.map { measured in
            HLSPlaylists.Variant(
                uri: measured.rendition.playlist,
                iFramesURI: measured.rendition.iFramesPlaylist,
                media: measured.media,
                codecs: measured.track.codecs ?? "",
                width: measured.track.width ?? 0,
                height: measured.track.height ?? 0,
                frameRate: measured.rendition.frameRate ?? (measured.frameDuration > 0 ? 1 / measured.frameDuration : 0)
            )
        }
        let audioGroup = sound.map { measured in
            HLSPlaylists.Audio(
                uri: measured.rendition.playlist,
                media: measured.media,
                channels: measured.track.channels ?? 2
            )
        }
        files["master.m3u8"] = HLSPlaylists.master(variants: variants, audio: audioGroup)
        let duration = all.map { $0.media.segments.reduce(0) { $0 + $1.duration } }.max() ?? 0
        let frameRate = videos.first?.rendition.frameRate.map { HLSPlaylists.decimal($0, places: 3) }
        files["manifest.mpd"] = DASHManifest.manifest(
            video: videos.map { representation($0, bandwidth: Int($0.media.peakBitRate.rounded(.up))) },
            audio: sound.map { [representation($0, bandwidth: Int($0.media.peakBitRate.rounded(.up)))] } ?? [],
            duration: duration,
            frameRate: frameRate
        )
        // The rules, on what was measured against what was declared.
        let audioPeak = sound?.media.peakBitRate ?? 0
        let audioAverage = sound?.media.averageBitRate ?? 0
        var bandwidths: [String: (declared: Int, measuredPeak: Int, measuredAverage: Int)] = [:]
        let checked = all.map { measured in
            var rule = StreamingRules.Rendition(
                name: measured.rendition.name,
                isVideo: measured.track.handler == "vide",
                segmentDurations: measured.media.segments.map(\.duration),
                segmentsStartWithIDR: measured.startsWithIDR,
                segmentStarts: measured.starts,
                frameDuration: measured.frameDuration,
                mediaDuration: measured.shownDuration,
                targetDuration: target,
                declaredDuration: measured.media.segments.reduce(0) { $0 + $1.duration },
                declaredCodecs: measured.track.codecs ?? "",
                measuredCodecs: measured.track.codecs ?? "?"
            )
            if measured.track.handler == "vide" {
                rule.pixels = (measured.track.width ?? 0) * (measured.track.height ?? 0)
                let peak = measured.media.peakBitRate + audioPeak
                let average = measured.media.averageBitRate + audioAverage
                rule.declaredBandwidth = Int(peak.rounded(.up))
                rule.measuredPeak = peak
                rule.declaredAverage = Int(average.rounded(.up))
                rule.measuredAverage = average
                bandwidths[measured.rendition.name] = (Int(peak.rounded(.up)), Int(peak), Int(average))
            }
            return rule
        }
        var package = Package(
            files: files,
            findings: StreamingRules.check(checked, playlistVersion: HLSPlaylists.version, hasMap: true),
            bandwidths: bandwidths
        )
        for measured in all {
            package.codecs[measured.rendition.name] = measured.track.codecs ?? ""
            package.segmentCounts[measured.rendition.name] = measured.media.segments.count
        }
        package.duration = duration
        return package
    }

    static func measure(_ rendition: Rendition, read: (String) throws -> [UInt8]) throws -> Measured {
        let tracks = try FragmentedMP4.tracks(inInitialization: try read(rendition.initialization))
        guard tracks.count == 1, let track = tracks.first, track.timescale > 0 else {
            throw FragmentedMP4.Problem(
                "\(rendition.initialization): one track expected, \(tracks.count) found"
            )
        }
        var segments: [HLSPlaylists.Segment] = []
        var shown: [Int64] = []
        var idr: [Bool] = []
        var ticks: [Int64] = []
        var firstTick: Int64 = 0
        var frames: [UInt32] = []
        var shownEnd = Int64.min
        for (index, name) in rendition.segments.enumerated() {
            let bytes = try read(name)
            let fragments = try FragmentedMP4.fragments(inSegment: bytes, tracks: tracks)
            let samples = fragments.flatMap(\.samples)
            guard let first = fragments.first, let sample = samples.first else {
                throw FragmentedMP4.Problem("\(name) holds no samples")
            }
            if index == 0 { firstTick = Int64(first.baseDecodeTime) }
            let duration = fragments.reduce(UInt64(0)) { $0 + $1.duration }
            ticks.append(Int64(duration))
            frames += samples.map(\.duration)
            // Where the segment's first picture is shown (rule 1 compares what a viewer sees):
            // its decode time plus its composition offset.
            shown.append(Int64(first.baseDecodeTime) + sample.compositionOffset)
            for fragment in fragments {
                var time = Int64(fragment.baseDecodeTime)
                for sample in fragment.samples {
                    shownEnd = max(shownEnd, time + sample.compositionOffset + Int64(sample.duration))
                    time += Int64(sample.duration)
                }
            }
            idr.append(sample.isSync)
            segments.append(
                HLSPlaylists.Segment(
                    uri: name,
                    duration: Double(duration) / Double(track.timescale),
                    bytes: Int64(bytes.count),
                    keyframe: track.handler == "vide"
                        ? Int64(first.moofOffset)..<Int64(sample.offset + Int(sample.size)) : nil
                )
            )
        }
        // A segment lasts from its first picture's showing to the next segment's (decision
        // 156): with B-frames the decode times run a reorder delay ahead of the showing, and
        // when the frame rate changes that delay changes with it, so the sum of the samples'
        // decode durations is not how long the pictures are shown. Sound has no reordering:
        // the same either way.
        let presented = zip(shown, shown.dropFirst().map(Optional.some) + [shownEnd]).map { $1! - $0 }
        if presented.allSatisfy({ $0 > 0 }) {
            for index in segments.indices {
                segments[index].duration = Double(presented[index]) / Double(track.timescale)
            }
        }
        let typical = frames.sorted().dropFirst(frames.count / 2).first ?? 0
        return Measured(
            rendition: rendition,
            track: track,
            media: HLSPlaylists.Media(initialization: rendition.initialization, segments: segments),
            starts: shown.map { Double($0) / Double(track.timescale) },
            startsWithIDR: track.handler == "vide" ? idr : [],
            ticks: ticks,
            firstTick: firstTick,
            frameDuration: Double(typical) / Double(track.timescale),
            shownDuration: Double(shownEnd - (shown.first ?? shownEnd)) / Double(track.timescale)
        )
    }

    static func representation(_ measured: Measured, bandwidth: Int) -> DASHManifest.Representation {
        let name = measured.rendition.name
        let first = measured.rendition.segments.first ?? "\(name)-00001.m4s"
        // `720p-00001.m4s` → `720p-$Number%05d$.m4s`, starting at 1: the digits that end the
        // name before its extension (which may hold digits of its own).
        let dot = first.lastIndex(of: ".") ?? first.endIndex
        let (stem, suffix) = (first[..<dot], String(first[dot...]))
        let digits = stem.reversed().prefix { $0.isNumber }.count
        let prefix = String(stem.dropLast(digits))
        let number = Int(stem.suffix(digits)) ?? 1
        var representation = DASHManifest.Representation(
            id: name,
            bandwidth: bandwidth,
            codecs: measured.track.codecs ?? "",
            initialization: measured.rendition.initialization,
            media: "\(prefix)$Number%0\(digits)d$\(suffix)",
            timescale: Int(measured.track.timescale),
            start: measured.firstTick,
            durations: measured.ticks
        )
        representation.startNumber = number
        representation.width = measured.track.width
        representation.height = measured.track.height
        representation.sampleRate = measured.track.sampleRate
        representation.channels = measured.track.channels
        return representation
    }
}
