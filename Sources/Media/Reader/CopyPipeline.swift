import CFFmpeg

/// Passes compressed packets through (passthrough): video from the chosen keyframe, other
/// tracks from the same instant, timestamps rebased so the keyframe is at 0.
final class CopyPipeline: TrackPipeline {
    private let isVideo: Bool
    private let timeBase: AVRational
    private let startTimestamp: Int64
    private let keyframePTS: Int64?
    private let sink: SampleSink
    private var started: Bool

    init(stream: UnsafeMutablePointer<AVStream>, window: ReadWindow, sink: @escaping SampleSink) {
        let index = Int(stream.pointee.index)
        isVideo = stream.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_VIDEO
        timeBase = stream.pointee.time_base
        startTimestamp = window.startTimestamp(streamIndex: index, timeBase: timeBase)
        keyframePTS = window.keyframe?.streamIndex == index ? window.keyframe?.pts : nil
        self.sink = sink
        started = !isVideo
    }

    func consume(_ packet: Packet) throws(MediaError) -> Bool {
        if !started {
            // Video starts at the chosen keyframe (or the first keyframe when reading from the top).
            guard packet.isKeyframe, keyframePTS == nil || packet.pts == keyframePTS || packet.pts == noPTS else {
                return true
            }
            started = true
        } else if !isVideo, packet.pts != noPTS, packet.pts < startTimestamp {
            return true
        }
        if packet.pts != noPTS { packet.pts -= startTimestamp }
        if packet.dts != noPTS { packet.dts -= startTimestamp }
        let pts = packet.pts != noPTS ? packet.pts : packet.dts
        guard
            sink(
                SampleBuffer(payload: .packet(packet), pts: pts, duration: max(0, packet.duration), timeBase: timeBase)
            )
        else {
            throw MediaError.cancelled()
        }
        return true
    }

    func finish() throws(MediaError) {}
}
