import Foundation
import Streaming
import Testing

#if canImport(FoundationXML)
import FoundationXML
#endif

/// The DASH manifest's XML: exact for a small ladder, well-formed by Foundation's parser.
@Suite("DASH manifest")
struct DASHManifestTests {
    static func representation(
        _ id: String,
        bandwidth: Int,
        timescale: Int,
        durations: [Int64]
    ) -> DASHManifest.Representation {
        DASHManifest.Representation(
            id: id,
            bandwidth: bandwidth,
            codecs: id == "audio" ? "mp4a.40.2" : "avc1.64001F",
            initialization: "\(id)/init.mp4",
            media: "\(id)/seg-$Number%05d$.m4s",
            timescale: timescale,
            start: 0,
            durations: durations
        )
    }

    @Test("one video and one audio set, equal durations folded into r, the presentation's length")
    func manifest() throws {
        var video = Self.representation(
            "720p",
            bandwidth: 1_328_000,
            timescale: 15_360,
            durations: [92_160, 92_160, 53_760]
        )
        video.width = 1280
        video.height = 720
        var audio = Self.representation(
            "audio",
            bandwidth: 128_000,
            timescale: 48_000,
            durations: [288_768, 287_744, 167_488]
        )
        audio.sampleRate = 48_000
        audio.channels = 2
        let xml = DASHManifest.manifest(video: [video], audio: [audio], duration: 15.5, frameRate: "30")
        #expect(
            xml == """
                <?xml version="1.0" encoding="UTF-8"?>
                <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" profiles="urn:mpeg:dash:profile:isoff-live:2011" minBufferTime="PT2S" mediaPresentationDuration="PT15.500S">
                  <Period id="0" start="PT0S">
                    <AdaptationSet id="0" contentType="video" mimeType="video/mp4" segmentAlignment="true" startWithSAP="1" maxWidth="1280" maxHeight="720" frameRate="30">
                      <Representation id="720p" bandwidth="1328000" codecs="avc1.64001F" width="1280" height="720" sar="1:1">
                        <SegmentTemplate timescale="15360" initialization="720p/init.mp4" media="720p/seg-$Number%05d$.m4s" startNumber="1">
                          <SegmentTimeline>
                            <S t="0" d="92160" r="1"/>
                            <S d="53760"/>
                          </SegmentTimeline>
                        </SegmentTemplate>
                      </Representation>
                    </AdaptationSet>
                    <AdaptationSet id="1" contentType="audio" mimeType="audio/mp4" segmentAlignment="true" startWithSAP="1">
                      <Representation id="audio" bandwidth="128000" codecs="mp4a.40.2" audioSamplingRate="48000">
                        <AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="2"/>
                        <SegmentTemplate timescale="48000" initialization="audio/init.mp4" media="audio/seg-$Number%05d$.m4s" startNumber="1">
                          <SegmentTimeline>
                            <S t="0" d="288768"/>
                            <S d="287744"/>
                            <S d="167488"/>
                          </SegmentTimeline>
                        </SegmentTemplate>
                      </Representation>
                    </AdaptationSet>
                  </Period>
                </MPD>

                """
        )
    }

    @Test("an audio-only ladder has one set; names are escaped; the XML parses")
    func audioOnlyAndEscaping() throws {
        var audio = Self.representation("audio", bandwidth: 64_000, timescale: 44_100, durations: [264_600])
        audio.initialization = "a&b/init.mp4"
        let xml = DASHManifest.manifest(video: [], audio: [audio], duration: 6, frameRate: nil)
        #expect(!xml.contains(#"contentType="video""#) && xml.contains(#"<AdaptationSet id="0" contentType="audio""#))
        #expect(xml.contains(#"initialization="a&amp;b/init.mp4""#))
        let parser = XMLParser(data: Data(xml.utf8))
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
    }
}
