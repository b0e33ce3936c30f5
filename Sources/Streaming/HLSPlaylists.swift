import Foundation

/// HLS playlists written from what the ladder's encode measured (issue 29; RFC 8216 and
/// Apple's HLS authoring specification): VOD media playlists of CMAF segments with an
/// `EXT-X-MAP`, an I-frame playlist per video rendition (byte ranges of each segment's IDR),
/// and a master playlist whose `BANDWIDTH` and `AVERAGE-BANDWIDTH` come from the segments'
/// sizes, not from the preset. Pure: text from values.
public enum HLSPlaylists {
    /// `EXT-X-VERSION`: 7 for `EXT-X-MAP` in a playlist without I-frames only (RFC 8216 §7:
    /// 6 is the least for a MAP there; Apple's tools write 7).
    public static let version = 7

    /// One media segment: its file, duration in seconds, size, and (video) where its IDR is.
    public struct Segment: Sendable, Hashable {
        public var uri: String
        public var duration: Double
        public var bytes: Int64
        /// The byte range of the segment's first IDR frame (its `moof` and `mdat` up to the end
        /// of that frame), for the I-frame playlist; `nil` for audio.
        public var keyframe: Range<Int64>?

        public init(uri: String, duration: Double, bytes: Int64, keyframe: Range<Int64>? = nil) {
            self.uri = uri
            self.duration = duration
            self.bytes = bytes
            self.keyframe = keyframe
        }
    }

    /// One rendition's segments, behind one initialization segment.
    public struct Media: Sendable, Hashable {
        public var initialization: String
        public var segments: [Segment]

        public init(initialization: String, segments: [Segment]) {
            self.initialization = initialization
            self.segments = segments
        }

        /// `EXT-X-TARGETDURATION`: the longest segment, rounded to the nearest second (RFC 8216
        /// §4.3.3.1: every EXTINF rounded is at most the target).
        public var targetDuration: Int { Int((segments.map(\.duration).max() ?? 0).rounded()) }

        /// The highest bit rate of one segment (bits per second).
        public var peakBitRate: Double {
            segments.filter { $0.duration > 0 }.map { Double($0.bytes) * 8 / $0.duration }.max() ?? 0
        }

        /// Bits per second over the whole rendition.
        public var averageBitRate: Double {
            let duration = segments.reduce(0) { $0 + $1.duration }
            return duration > 0 ? Double(segments.reduce(0) { $0 + $1.bytes }) * 8 / duration : 0
        }
    }

    /// A VOD media playlist. `target` is the ladder's common target duration (every media
    /// playlist of a ladder carries the same one).
    public static func media(_ media: Media, target: Int) -> String {
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:0",
            "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-INDEPENDENT-SEGMENTS", #"#EXT-X-MAP:URI="\#(media.initialization)""#,
        ]
        for segment in media.segments {
            lines.append("#EXTINF:\(decimal(segment.duration, places: 6)),")
            lines.append(segment.uri)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The I-frame playlist of a video rendition: each segment's IDR as a byte range, lasting
    /// until the next one (RFC 8216 §4.3.3.6).
    public static func iFrames(_ media: Media, target: Int) -> String {
        var lines = [
            "#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:0",
            "#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-I-FRAMES-ONLY", #"#EXT-X-MAP:URI="\#(media.initialization)""#,
        ]
        for segment in media.segments {
            guard let keyframe = segment.keyframe else { continue }
            lines.append("#EXTINF:\(decimal(segment.duration, places: 6)),")
            lines.append("#EXT-X-BYTERANGE:\(keyframe.count)@\(keyframe.lowerBound)")
            lines.append(segment.uri)
        }
        lines.append("#EXT-X-ENDLIST")
        return lines.joined(separator: "\n") + "\n"
    }

    /// A video rendition as the master playlist lists it.
    public struct Variant: Sendable, Hashable {
        public var uri: String
        public var iFramesURI: String?
        public var media: Media
        public var codecs: String
        public var width: Int
        public var height: Int
        public var frameRate: Double

        public init(
            uri: String,
            iFramesURI: String?,
            media: Media,
            codecs: String,
            width: Int,
            height: Int,
            frameRate: Double
        ) {
            self.uri = uri
            self.iFramesURI = iFramesURI
            self.media = media
            self.codecs = codecs
            self.width = width
            self.height = height
            self.frameRate = frameRate
        }
    }

    /// The audio rendition group (one AAC-LC rendition, encoded once for every variant).
    public struct Audio: Sendable, Hashable {
        public var uri: String
        public var media: Media
        public var channels: Int
        public var codecs: String = CodecStrings.aacLC
        public var groupID = "audio"
        public var name = "default"
        public var language: String?

        public init(uri: String, media: Media, channels: Int, language: String? = nil) {
            self.uri = uri
            self.media = media
            self.channels = channels
            self.language = language
        }
    }

    /// The master playlist: variants from the lowest `BANDWIDTH` to the highest. A variant's
    /// `BANDWIDTH` is its video's peak segment bit rate plus the audio's (the renditions play
    /// together), rounded up; `AVERAGE-BANDWIDTH` the same with the averages. With no video
    /// (an audio-only ladder) the audio rendition is the one variant.
    public static func master(variants: [Variant], audio: Audio?) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-INDEPENDENT-SEGMENTS"]
        if let audio, !variants.isEmpty {
            var attributes = [
                "TYPE=AUDIO", #"GROUP-ID="\#(audio.groupID)""#, #"NAME="\#(audio.name)""#, "DEFAULT=YES",
                "AUTOSELECT=YES",
            ]
            if let language = audio.language { attributes.append(#"LANGUAGE="\#(language)""#) }
            attributes += [#"CHANNELS="\#(audio.channels)""#, #"URI="\#(audio.uri)""#]
            lines.append("#EXT-X-MEDIA:" + attributes.joined(separator: ","))
        }
        let audioPeak = audio?.media.peakBitRate ?? 0
        let audioAverage = audio?.media.averageBitRate ?? 0
        let ordered = variants.sorted { $0.media.peakBitRate < $1.media.peakBitRate }
        for variant in ordered {
            var attributes = [
                "BANDWIDTH=\(Int((variant.media.peakBitRate + audioPeak).rounded(.up)))",
                "AVERAGE-BANDWIDTH=\(Int((variant.media.averageBitRate + audioAverage).rounded(.up)))",
                #"CODECS="\#(([variant.codecs] + (audio.map { [$0.codecs] } ?? [])).joined(separator: ","))""#,
                "RESOLUTION=\(variant.width)x\(variant.height)",
                "FRAME-RATE=\(decimal(variant.frameRate, places: 3))",
            ]
            if let audio { attributes.append(#"AUDIO="\#(audio.groupID)""#) }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(variant.uri)
        }
        for variant in ordered {
            guard let uri = variant.iFramesURI else { continue }
            let iFrames = variant.media.segments.compactMap { segment in
                segment.keyframe.map { (bytes: Int64($0.count), duration: segment.duration) }
            }
            let peak = iFrames.filter { $0.duration > 0 }.map { Double($0.bytes) * 8 / $0.duration }.max() ?? 0
            let attributes = [
                "BANDWIDTH=\(Int(peak.rounded(.up)))", #"CODECS="\#(variant.codecs)""#,
                "RESOLUTION=\(variant.width)x\(variant.height)", #"URI="\#(uri)""#,
            ]
            lines.append("#EXT-X-I-FRAME-STREAM-INF:" + attributes.joined(separator: ","))
        }
        if variants.isEmpty, let audio {
            lines.append(
                "#EXT-X-STREAM-INF:BANDWIDTH=\(Int(audioPeak.rounded(.up))),"
                    + "AVERAGE-BANDWIDTH=\(Int(audioAverage.rounded(.up))),"
                    + #"CODECS="\#(audio.codecs)""#
            )
            lines.append(audio.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `value` with `places` decimals, a dot whatever the locale.
    static func decimal(_ value: Double, places: Int) -> String {
        String(format: "%.\(places)f", locale: Locale(identifier: "en_US_POSIX"), value)
    }
}
