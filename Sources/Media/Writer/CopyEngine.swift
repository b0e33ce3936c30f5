import CFFmpeg

/// Copies packets. A damaged input's packets can be unwritable (an ADTS header the muxer's
/// bitstream filter cannot parse, timestamps out of order): timestamps are kept increasing as
/// the `ffmpeg` CLI does, and a packet the muxer still refuses is dropped, counted against the
/// same damage budget as undecodable packets (`decode_failed` once damage dominates).
final class CopyEngine: Engine {
    private let sourceTimeBase: AVRational
    private var lastDTS: Int64?
    private var damage: DecodeErrorBudget

    init(track: AssetTrack, asset: Asset, file: OutputFile) throws(MediaError) {
        let source = asset.input.stream(track.index)
        sourceTimeBase = source.pointee.time_base
        let parameters = source.pointee.codecpar!
        let stream: UnsafeMutablePointer<AVStream>
        do {
            stream = try file.addStream()
            try check(avcodec_parameters_copy(stream.pointee.codecpar, parameters), "avcodec_parameters_copy")
        } catch {
            throw MediaError(.internalError, "setting up a copied stream failed", detail: "\(error)")
        }
        let hvc1 = cff_mktag(0x68, 0x76, 0x63, 0x31)
        if stream.pointee.codecpar.pointee.codec_tag != hvc1 { stream.pointee.codecpar.pointee.codec_tag = 0 }
        stream.pointee.time_base = sourceTimeBase
        stream.pointee.sample_aspect_ratio = source.pointee.sample_aspect_ratio
        // Keep the display matrix: a copied picture is still shown rotated.
        var size: Int = 0
        if let matrix = av_stream_get_side_data(source, AV_PKT_DATA_DISPLAYMATRIX, &size), size > 0,
            let copy = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, size)
        {
            copy.update(from: matrix, count: size)
        }
        damage = DecodeErrorBudget(trackIndex: track.index, action: "copy")
        super.init(file: file, streamIndex: Int(stream.pointee.index), codecName: track.codec)
        describe(as: track)
    }

    /// mp4 and mov need strictly increasing decode timestamps, and a presentation time no
    /// earlier than the decode time.
    override func adjust(_ packet: UnsafeMutablePointer<AVPacket>) {
        var dts = packet.pointee.dts
        if dts == noPTS { dts = lastDTS.map { $0 + 1 } ?? (packet.pointee.pts != noPTS ? packet.pointee.pts : 0) }
        if let lastDTS, dts <= lastDTS { dts = lastDTS + 1 }
        packet.pointee.dts = dts
        if packet.pointee.pts == noPTS || packet.pointee.pts < dts { packet.pointee.pts = dts }
        lastDTS = dts
    }

    override func accepted() { damage.succeeded() }

    override func refused(_ error: FFError) throws(MediaError) {
        try damage.failed(error.code)
    }

    override func append(_ sample: SampleBuffer) throws(MediaError) {
        guard case .packet(let packet) = sample.payload else {
            throw MediaError(.internalError, "a passthrough input was given a decoded sample")
        }
        packet.pointer.pointee.pos = -1
        try write(packet.pointer, from: sourceTimeBase)
    }
}
