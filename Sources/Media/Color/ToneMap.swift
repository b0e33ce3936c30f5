import CFFmpeg

/// HDR to SDR, as the ffmpeg CLI's users are told to do it (the chain `jobctl presets` prints):
/// the picture linearised (zimg's PQ or HLG EOTF, a nominal peak of 100 cd/m²), converted to
/// BT.709 primaries in linear light, tone-mapped with Hable's filmic curve (John Hable's
/// Uncharted 2 operator, no desaturation), then BT.709's transfer and matrix, limited range,
/// 8 bits. Run at the output size (after scaling, from 10-bit pictures), as a CLI chain that
/// scales first would.
enum ToneMap {
    /// The libavfilter chain; it reads the input's transfer, primaries and matrix from each
    /// picture (a decoded HDR picture is tagged PQ or HLG, BT.2020).
    static let chain =
        "zscale=transfer=linear:npl=100,format=gbrpf32le,zscale=primaries=bt709,"
        + "tonemap=tonemap=hable:desat=0,zscale=transfer=bt709:matrix=bt709:range=limited,format=yuv420p"

    /// The format the scaler gives the tone-map: 10 bits, so the curve has the source's steps.
    static let inputFormat = AV_PIX_FMT_YUV420P10LE
}

/// The tone-map of one track's pictures (`ToneMap`), at one size, from `range` (one thread:
/// a session runs one per track, and the encoder has the CPUs).
final class ToneMapper {
    private let graph: FilterGraph
    /// The transfer an untagged picture is given: the range's.
    private let transfer: AVColorTransferCharacteristic

    init(width: Int32, height: Int32, from range: DynamicRange) throws(MediaError) {
        transfer = range == .hlg ? AVCOL_TRC_ARIB_STD_B67 : AVCOL_TRC_SMPTE2084
        do {
            graph = try FilterGraph(chain: ToneMap.chain, width: width, height: height, format: ToneMap.inputFormat)
        } catch {
            throw MediaError(.internalError, "the HDR tone-map cannot be set up", detail: "\(error)")
        }
    }

    /// `picture` (10-bit 4:2:0 at the graph's size) as 8-bit BT.709 SDR, its timestamp kept.
    /// zimg reads the conversion from the picture's tags: one the bitstream left untagged
    /// (a Dolby Vision stream whose range comes from its configuration record, an HEVC stream
    /// without a colour description) is tagged with the range it was decided to be, BT.2020.
    func map(_ picture: Frame) throws -> Frame {
        let frame = picture.pointer
        if frame.pointee.color_trc == AVCOL_TRC_UNSPECIFIED { frame.pointee.color_trc = transfer }
        if frame.pointee.color_primaries == AVCOL_PRI_UNSPECIFIED { frame.pointee.color_primaries = AVCOL_PRI_BT2020 }
        if frame.pointee.colorspace == AVCOL_SPC_UNSPECIFIED { frame.pointee.colorspace = AVCOL_SPC_BT2020_NCL }
        if frame.pointee.color_range == AVCOL_RANGE_UNSPECIFIED { frame.pointee.color_range = AVCOL_RANGE_MPEG }
        guard let mapped = try graph.filter(frame).first else {
            throw FFError(code: cff_averror(EINVAL), operation: "the tone-map gave no picture")
        }
        mapped.pointer.pointee.pts = frame.pointee.pts
        return mapped
    }
}
