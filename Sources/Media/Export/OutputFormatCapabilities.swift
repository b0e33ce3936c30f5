import CFFmpeg

/// What each output container can hold, asked of FFmpeg's muxers.
enum OutputFormatCapabilities {
    static func canHold(_ track: AssetTrack, in format: ContainerFormat) -> Bool {
        guard let muxer = av_guess_format(format.muxerName, nil, nil),
            let descriptor = avcodec_descriptor_get_by_name(track.codec)
        else { return false }
        return avformat_query_codec(muxer, descriptor.pointee.id, FF_COMPLIANCE_NORMAL) == 1
    }
}
