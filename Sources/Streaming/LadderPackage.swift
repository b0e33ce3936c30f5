import Foundation

/// A ladder's playlists, manifest and report, made from its CMAF files as written (issue 29):
/// each rendition's directory holds `init.mp4` and its numbered segments; every number that
/// goes into a playlist (durations, sizes, byte ranges, CODECS, bandwidths) is measured from
/// those files (`FragmentedMP4`), and the rules are checked on the result (`StreamingRules`).
/// Writing the text files is the caller's (segments first, playlists last).
public enum LadderPackage {
    /// A rendition's directory under the ladder's root, and its files.
    public struct Rendition: Sendable, Hashable {
        public var name: String
        public var initialization = "init.mp4"
        /// The segment files, in order, named `PREFIX%0Nd.m4s` with consecutive numbers.
        public var segments: [String]
        public var frameRate: Double?

        public init(name: String, segments: [String], frameRate: Double? = nil) {
            self.name = name
            self.segments = segments
            self.frameRate = frameRate
        }
    }

    /// The text files to write, by path under the root, and what the rules found.
    public struct Package: Sendable {
        public var files: [String: String]
        public var findings: [StreamingRules.Finding]
        /// Declared and measured bandwidth per video rendition, for the job's result.
        public var bandwidths: [String: (declared: Int, measuredPeak: Int, measuredAverage: Int)]
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
    }

    public static func package(root: String, video: [Rendition], audio: Rendition?) throws -> Package {
        let videos = try video.map { try measure($0, root: root) }
        let sound = try audio.map { try measure($0, root: root) }
        let all = videos + (sound.map { [$0] } ?? [])
        let target = all.map(\.media.targetDuration).max() ?? 0
        var files: [String: String] = [:]
        for measured in all {
            files["\(measured.rendition.name)/index.m3u8"] = HLSPlaylists.media(measured.media, target: target)
        }
        for measured in videos {
            files["\(measured.rendition.name)/iframes.m3u8"] = HLSPlaylists.iFrames(measured.media, target: target)
        }
        let variants = videos.map { measured in
            HLSPlaylists.Variant(
                uri: "\(measured.rendition.name)/index.m3u8",
                iFramesURI: "\(measured.rendition.name)/iframes.m3u8",
                media: measured.media,
                codecs: measured.track.codecs ?? "",
                width: measured.track.width ?? 0,
                height: measured.track.height ?? 0,
                frameRate: measured.rendition.frameRate ?? (measured.frameDuration > 0 ? 1 / measured.frameDuration : 0)
            )
        }
        let audioGroup = sound.map { measured in
            HLSPlaylists.Audio(
                uri: "\(measured.rendition.name)/index.m3u8",
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
                mediaDuration: Double(measured.ticks.reduce(0, +)) / Double(measured.track.timescale),
                targetDuration: target,
                declaredDuration: measured.media.segments.reduce(0) { $0 + $1.duration },
                declaredCodecs: measured.track.codecs ?? "",
                measuredCodecs: measured.track.codecs ?? "?"
            )
            if measured.track.handler == "vide" {
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
        return Package(
            files: files,
            findings: StreamingRules.check(checked, playlistVersion: HLSPlaylists.version, hasMap: true),
            bandwidths: bandwidths
        )
    }

    static func measure(_ rendition: Rendition, root: String) throws -> Measured {
        let directory = (root as NSString).appendingPathComponent(rendition.name)
        func read(_ name: String) throws -> [UInt8] {
            Array(try Data(contentsOf: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(name))))
        }
        let tracks = try FragmentedMP4.tracks(inInitialization: try read(rendition.initialization))
        guard tracks.count == 1, let track = tracks.first, track.timescale > 0 else {
            throw FragmentedMP4.Problem(
                "\(rendition.name)/\(rendition.initialization): one track expected, \(tracks.count) found"
            )
        }
        var segments: [HLSPlaylists.Segment] = []
        var starts: [Double] = []
        var idr: [Bool] = []
        var ticks: [Int64] = []
        var firstTick: Int64 = 0
        var frames: [UInt32] = []
        for (index, name) in rendition.segments.enumerated() {
            let bytes = try read(name)
            let fragments = try FragmentedMP4.fragments(inSegment: bytes, tracks: tracks)
            let samples = fragments.flatMap(\.samples)
            guard let first = fragments.first, let sample = samples.first else {
                throw FragmentedMP4.Problem("\(rendition.name)/\(name) holds no samples")
            }
            if index == 0 { firstTick = Int64(first.baseDecodeTime) }
            let duration = fragments.reduce(UInt64(0)) { $0 + $1.duration }
            ticks.append(Int64(duration))
            frames += samples.map(\.duration)
            starts.append(Double(first.baseDecodeTime) / Double(track.timescale))
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
        let typical = frames.sorted().dropFirst(frames.count / 2).first ?? 0
        return Measured(
            rendition: rendition,
            track: track,
            media: HLSPlaylists.Media(initialization: rendition.initialization, segments: segments),
            starts: starts,
            startsWithIDR: track.handler == "vide" ? idr : [],
            ticks: ticks,
            firstTick: firstTick,
            frameDuration: Double(typical) / Double(track.timescale)
        )
    }

    static func representation(_ measured: Measured, bandwidth: Int) -> DASHManifest.Representation {
        let name = measured.rendition.name
        let first = measured.rendition.segments.first ?? "seg-00001.m4s"
        // `seg-00001.m4s` → `seg-$Number%05d$.m4s`, starting at 1: the digits that end the
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
            initialization: "\(name)/\(measured.rendition.initialization)",
            media: "\(name)/\(prefix)$Number%0\(digits)d$\(suffix)",
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
