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

    /// A graph tone-mapping pictures of `width`×`height` (one thread: a session runs one per
    /// track, and the encoder has the CPUs).
    static func graph(width: Int32, height: Int32) throws -> FilterGraph {
        try FilterGraph(chain: chain, width: width, height: height, format: inputFormat)
    }
}
