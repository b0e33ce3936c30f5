import Streaming
import Testing

/// The playlists' text, from measured segments: what RFC 8216 asks for, exactly.
@Suite("HLS playlists")
struct HLSPlaylistsTests {
    typealias Segment = HLSPlaylists.Segment

    /// 6 s + 6 s + 3.5 s of video: 450 KB, 900 KB (the peak: 1.2 Mb/s), 150 KB.
    static let video = HLSPlaylists.Media(
        initialization: "init.mp4",
        segments: [
            Segment(uri: "seg-00001.m4s", duration: 6, bytes: 450_000, keyframe: 0..<40_000),
            Segment(uri: "seg-00002.m4s", duration: 6, bytes: 900_000, keyframe: 0..<60_000),
            Segment(uri: "seg-00003.m4s", duration: 3.5, bytes: 150_000, keyframe: 0..<35_000),
        ]
    )
    /// 128 kb/s audio, the same boundaries.
    static let audio = HLSPlaylists.Media(
        initialization: "init.mp4",
        segments: [
            Segment(uri: "seg-00001.m4s", duration: 6, bytes: 96_000),
            Segment(uri: "seg-00002.m4s", duration: 6, bytes: 96_000),
            Segment(uri: "seg-00003.m4s", duration: 3.5, bytes: 56_000),
        ]
    )

    @Test("a VOD media playlist: version 7, the target, a MAP, every EXTINF, ENDLIST")
    func mediaPlaylist() {
        #expect(Self.video.targetDuration == 6)
        #expect(
            HLSPlaylists.media(Self.video, target: 6) == """
                #EXTM3U
                #EXT-X-VERSION:7
                #EXT-X-TARGETDURATION:6
                #EXT-X-MEDIA-SEQUENCE:0
                #EXT-X-PLAYLIST-TYPE:VOD
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-MAP:URI="init.mp4"
                #EXTINF:6.000000,
                seg-00001.m4s
                #EXTINF:6.000000,
                seg-00002.m4s
                #EXTINF:3.500000,
                seg-00003.m4s
                #EXT-X-ENDLIST

                """
        )
    }

    @Test("the I-frame playlist: each segment's IDR as a byte range")
    func iFramePlaylist() {
        let text = HLSPlaylists.iFrames(Self.video, target: 6)
        #expect(text.contains("#EXT-X-I-FRAMES-ONLY\n"))
        #expect(text.contains("#EXTINF:6.000000,\n#EXT-X-BYTERANGE:60000@0\nseg-00002.m4s\n"))
        #expect(text.components(separatedBy: "#EXT-X-BYTERANGE:").count == 4)
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
    }

    @Test("the master playlist: measured peak and average bandwidth with the audio, codecs, resolution, frame rate")
    func masterPlaylist() {
        let low = HLSPlaylists.Media(
            initialization: "init.mp4",
            segments: Self.video.segments.map { Segment(uri: $0.uri, duration: $0.duration, bytes: $0.bytes / 4) }
        )
        let master = HLSPlaylists.master(
            variants: [
                .init(
                    uri: "720p/index.m3u8",
                    iFramesURI: "720p/iframes.m3u8",
                    media: Self.video,
                    codecs: "avc1.64001F",
                    width: 1280,
                    height: 720,
                    frameRate: 30
                ),
                .init(
                    uri: "360p/index.m3u8",
                    iFramesURI: nil,
                    media: low,
                    codecs: "avc1.64001E",
                    width: 640,
                    height: 360,
                    frameRate: 29.97
                ),
            ],
            audio: .init(uri: "audio/index.m3u8", media: Self.audio, channels: 2)
        )
        // Peaks: video 1,200,000 b/s + audio 128,000 b/s; averages: 1,500,000 B × 8 / 15.5 s
        // = 774,193.5… + 248,000 B × 8 / 15.5 s = 128,000.
        #expect(
            master == """
                #EXTM3U
                #EXT-X-VERSION:7
                #EXT-X-INDEPENDENT-SEGMENTS
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="default",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="audio/index.m3u8"
                #EXT-X-STREAM-INF:BANDWIDTH=428000,AVERAGE-BANDWIDTH=321549,CODECS="avc1.64001E,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=29.970,AUDIO="audio"
                360p/index.m3u8
                #EXT-X-STREAM-INF:BANDWIDTH=1328000,AVERAGE-BANDWIDTH=902194,CODECS="avc1.64001F,mp4a.40.2",RESOLUTION=1280x720,FRAME-RATE=30.000,AUDIO="audio"
                720p/index.m3u8
                #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=80000,CODECS="avc1.64001F",RESOLUTION=1280x720,URI="720p/iframes.m3u8"

                """
        )
    }

    @Test("an audio-only ladder: the audio rendition is the one variant")
    func audioOnly() {
        let master = HLSPlaylists.master(
            variants: [],
            audio: .init(uri: "audio/index.m3u8", media: Self.audio, channels: 1)
        )
        #expect(!master.contains("#EXT-X-MEDIA:"))
        #expect(
            master.hasSuffix(
                #"#EXT-X-STREAM-INF:BANDWIDTH=128000,AVERAGE-BANDWIDTH=128000,CODECS="mp4a.40.2""#
                    + "\naudio/index.m3u8\n"
            )
        )
    }
}
