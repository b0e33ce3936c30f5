import CFFmpeg

/// A decoder (`AVCodecContext`) for one input stream.
final class CodecDecoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    /// Where the packets this decoder failed on are counted (its asset's, for all its decoders).
    let damage: DecodeDamage?

    /// - Parameters:
    ///   - maxPixels: pictures larger than this are refused before they are allocated.
    ///   - damage: counts the packets that failed to decode.
    init(stream: UnsafeMutablePointer<AVStream>, maxPixels: Int, damage: DecodeDamage? = nil) throws {
        self.damage = damage
        let parameters = stream.pointee.codecpar!
        guard let codec = avcodec_find_decoder(parameters.pointee.codec_id) else {
            throw FFError(code: cff_averror_decoder_not_found(), operation: "avcodec_find_decoder")
        }
        guard let context = avcodec_alloc_context3(codec) else { fatalError("avcodec_alloc_context3: out of memory") }
        self.context = context
        try check(avcodec_parameters_to_context(context, parameters), "avcodec_parameters_to_context")
        context.pointee.pkt_timebase = stream.pointee.time_base
        // threads=auto, as the ffmpeg CLI does: the default of 1 disables frame threading (docs/ffmpeg.md #16).
        context.pointee.thread_count = 0
        context.pointee.max_pixels = Int64(maxPixels)
        try check(avcodec_open2(context, codec, nil), "avcodec_open2(decoder \(String(cString: codec.pointee.name)))")
    }

    deinit {
        var freeing: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&freeing)
    }

    /// Sends a packet, or `nil` to start draining. Returns FFmpeg's code.
    func send(_ packet: UnsafeMutablePointer<AVPacket>?) -> Int32 { avcodec_send_packet(context, packet) }

    /// Receives the next frame into `frame`. Returns FFmpeg's code (`EAGAIN`, `EOF` are control flow).
    func receive(_ frame: UnsafeMutablePointer<AVFrame>) -> Int32 { avcodec_receive_frame(context, frame) }

    /// The picture size the stream's headers announce now (it can change mid-stream).
    var pictureSize: (width: Int, height: Int) { (Int(context.pointee.width), Int(context.pointee.height)) }
}

/// An encoder (`AVCodecContext`) for one output stream.
final class CodecEncoder {
    let context: UnsafeMutablePointer<AVCodecContext>
    let codecName: String

    /// Finds the encoder by name, lets `configure` fill in the context, and opens it with
    /// `options` (private options such as `crf`, `preset`). An option the encoder did not take
    /// is an error, not a silent no-op.
    init(
        name: String,
        options: [String: String] = [:],
        configure: (UnsafeMutablePointer<AVCodecContext>) throws -> Void
    ) throws {
        guard let codec = avcodec_find_encoder_by_name(name) else {
            throw FFError(code: cff_averror(ENOSYS), operation: "avcodec_find_encoder_by_name(\(name))")
        }
        guard let context = avcodec_alloc_context3(codec) else { fatalError("avcodec_alloc_context3: out of memory") }
        self.context = context
        self.codecName = name
        try configure(context)
        var dictionary: OpaquePointer? = nil
        for (key, value) in options.sorted(by: { $0.key < $1.key }) { av_dict_set(&dictionary, key, value, 0) }
        defer { av_dict_free(&dictionary) }
        try check(avcodec_open2(context, codec, &dictionary), "avcodec_open2(encoder \(name))")
        if let leftover = av_dict_get(dictionary, "", nil, AV_DICT_IGNORE_SUFFIX) {
            throw FFError(
                code: cff_averror(EINVAL),
                operation: "encoder \(name) has no option '\(String(cString: leftover.pointee.key))'"
            )
        }
    }

    deinit {
        var freeing: UnsafeMutablePointer<AVCodecContext>? = context
        avcodec_free_context(&freeing)
    }

    static func isAvailable(_ name: String) -> Bool { avcodec_find_encoder_by_name(name) != nil }

    var timeBase: AVRational { context.pointee.time_base }
    var frameSize: Int32 { context.pointee.frame_size }

    /// Sends a frame, or `nil` to drain. Returns FFmpeg's code.
    func send(_ frame: UnsafeMutablePointer<AVFrame>?) -> Int32 { avcodec_send_frame(context, frame) }

    /// Receives the next packet into `packet`. Returns FFmpeg's code.
    func receive(_ packet: UnsafeMutablePointer<AVPacket>) -> Int32 { avcodec_receive_packet(context, packet) }
}
