import Foundation

/// The DASH manifest over the ladder's CMAF files (issue 29): the same init and media segments
/// the HLS playlists list, described by a `SegmentTemplate` with a `SegmentTimeline` of exact
/// durations in each track's timescale (ISO/IEC 23009-1, the live profile's addressing, a
/// static presentation). Pure: XML from values.
public enum DASHManifest {
    /// One representation's files and timing.
    public struct Representation: Sendable, Hashable {
        public var id: String
        public var bandwidth: Int
        public var codecs: String
        /// `initialization` and `media` templates relative to the manifest (`720p/init.mp4`,
        /// `720p/seg-$Number%05d$.m4s`).
        public var initialization: String
        public var media: String
        public var timescale: Int
        /// The number of the first segment file (`$Number$`).
        public var startNumber = 1
        /// The first segment's start and every segment's duration, in `timescale` units.
        public var start: Int64
        public var durations: [Int64]
        public var width: Int?
        public var height: Int?
        public var sampleRate: Int?
        public var channels: Int?

        public init(
            id: String,
            bandwidth: Int,
            codecs: String,
            initialization: String,
            media: String,
            timescale: Int,
            start: Int64,
            durations: [Int64]
        ) {
            self.id = id
            self.bandwidth = bandwidth
            self.codecs = codecs
            self.initialization = initialization
            self.media = media
            self.timescale = timescale
            self.start = start
            self.durations = durations
        }
    }

    /// The manifest: one video adaptation set (every video representation, lowest first) and
    /// one audio set; either may be empty (an audio-only or a silent ladder).
    public static func manifest(
        video: [Representation],
        audio: [Representation],
        duration: Double,
        frameRate: String?
    ) -> String {
        var lines = [
            #"<?xml version="1.0" encoding="UTF-8"?>"#,
            #"<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" profiles="urn:mpeg:dash:profile:isoff-live:2011" "#
                + #"minBufferTime="PT2S" mediaPresentationDuration="\#(isoDuration(duration))">"#,
            #"  <Period id="0" start="PT0S">"#,
        ]
        var setID = 0
        if !video.isEmpty {
            let widest = video.max { ($0.width ?? 0) < ($1.width ?? 0) }
            var attributes =
                #"id="\#(setID)" contentType="video" mimeType="video/mp4" segmentAlignment="true" startWithSAP="1""#
            if let width = widest?.width, let height = widest?.height {
                attributes += #" maxWidth="\#(width)" maxHeight="\#(height)""#
            }
            if let frameRate { attributes += #" frameRate="\#(frameRate)""# }
            lines.append("    <AdaptationSet \(attributes)>")
            for representation in video.sorted(by: { $0.bandwidth < $1.bandwidth }) {
                lines += element(representation)
            }
            lines.append("    </AdaptationSet>")
            setID += 1
        }
        if !audio.isEmpty {
            lines.append(
                #"    <AdaptationSet id="\#(setID)" contentType="audio" mimeType="audio/mp4" segmentAlignment="true" startWithSAP="1">"#
            )
            for representation in audio { lines += element(representation) }
            lines.append("    </AdaptationSet>")
        }
        lines += ["  </Period>", "</MPD>"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// A `Representation`: its size (video) or sample rate and channels (audio), its segments.
    static func element(_ representation: Representation) -> [String] {
        var own =
            #"id="\#(escaped(representation.id))" bandwidth="\#(representation.bandwidth)" codecs="\#(representation.codecs)""#
        if let width = representation.width, let height = representation.height {
            own += #" width="\#(width)" height="\#(height)" sar="1:1""#
        }
        if let rate = representation.sampleRate { own += #" audioSamplingRate="\#(rate)""# }
        var lines = ["      <Representation \(own)>"]
        if let channels = representation.channels {
            lines.append(
                #"        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="\#(channels)"/>"#
            )
        }
        return lines + template(representation) + ["      </Representation>"]
    }

    /// The `SegmentTemplate` and its timeline: runs of equal durations as one `S` with `r`.
    static func template(_ representation: Representation) -> [String] {
        var lines = [
            #"        <SegmentTemplate timescale="\#(representation.timescale)" initialization="\#(escaped(representation.initialization))" "#
                + #"media="\#(escaped(representation.media))" startNumber="\#(representation.startNumber)">"#,
            "          <SegmentTimeline>",
        ]
        var index = 0
        let durations = representation.durations
        while index < durations.count {
            var repeats = 0
            while index + repeats + 1 < durations.count, durations[index + repeats + 1] == durations[index] {
                repeats += 1
            }
            var element = "<S"
            if index == 0 { element += #" t="\#(representation.start)""# }
            element += #" d="\#(durations[index])""#
            if repeats > 0 { element += #" r="\#(repeats)""# }
            lines.append("            \(element)/>")
            index += repeats + 1
        }
        lines += ["          </SegmentTimeline>", "        </SegmentTemplate>"]
        return lines
    }

    /// `PT…S` with milliseconds.
    static func isoDuration(_ seconds: Double) -> String { "PT" + HLSPlaylists.decimal(seconds, places: 3) + "S" }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
