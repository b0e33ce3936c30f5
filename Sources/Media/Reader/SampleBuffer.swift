import CFFmpeg

/// One unit of media moving from a reader output to a writer input (`CMSampleBuffer`):
/// a decoded video frame, a run of decoded audio samples, or (passthrough) a compressed packet.
///
/// Timestamps are relative to the export's start: the first sample of the range is at 0.
/// Owned by one stage at a time: moved through queues, never shared (Sendable on that invariant).
public struct SampleBuffer: @unchecked Sendable {
    enum Payload {
        /// A picture in the output's size and pixel format; `pts`/`duration` in `timeBase`.
        case video(Frame)
        /// Samples in the output's format; `pts` counts samples (`timeBase` = 1/sample rate).
        case audio(Frame)
        /// A compressed packet, timestamps rebased, in the source stream's time base.
        case packet(Packet)
        /// No media: the output's samples still to come have at least `sequence`
        /// (`InputOrder`; only from a reader that `marksInputOrder`).
        case marker
    }

    let payload: Payload
    let pts: Int64
    let duration: Int64
    let timeBase: AVRational
    /// The demuxed packet whose reading released this sample (`InputOrder`).
    var sequence: Int64 = 0

    static func marker(_ sequence: Int64) -> SampleBuffer {
        SampleBuffer(payload: .marker, pts: 0, duration: 0, timeBase: AVRational(num: 1, den: 1), sequence: sequence)
    }

    /// Seconds from the export's start.
    public var presentationTime: Double { Double(pts) * timeBase.double }
    /// Seconds.
    public var durationSeconds: Double { Double(duration) * timeBase.double }
    /// Microseconds at which this sample ends, relative to the export's start.
    var endMicroseconds: Int64 { av_rescale_q(pts + duration, timeBase, microsecondBase) }

    /// What this sample counts as: one frame, N audio samples, one packet.
    var count: Int64 {
        switch payload {
        case .video, .packet: 1
        case .audio(let frame): Int64(frame.sampleCount)
        case .marker: 0
        }
    }
}
