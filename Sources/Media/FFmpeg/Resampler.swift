import CFFmpeg

/// Converts audio to one sample format, rate and channel layout (`SwrContext`): resampling and
/// downmixing with FFmpeg's default matrix, as the ffmpeg CLI's `-ac`/`-ar` do.
final class Resampler {
    private var context: OpaquePointer?
    let outputFormat: AVSampleFormat
    let outputRate: Int32
    private(set) var outputLayout = AVChannelLayout()
    private let inputFormat: AVSampleFormat
    private let inputChannels: Int32

    init(
        input layout: UnsafePointer<AVChannelLayout>,
        format: AVSampleFormat,
        rate: Int32,
        output outLayout: UnsafePointer<AVChannelLayout>,
        outputFormat: AVSampleFormat,
        outputRate: Int32
    ) throws {
        self.outputFormat = outputFormat
        self.outputRate = outputRate
        self.inputFormat = format
        self.inputChannels = layout.pointee.nb_channels
        try check(av_channel_layout_copy(&outputLayout, outLayout), "av_channel_layout_copy")
        try check(
            swr_alloc_set_opts2(
                &context,
                UnsafeMutablePointer(mutating: outLayout),
                outputFormat,
                outputRate,
                UnsafeMutablePointer(mutating: layout),
                format,
                rate,
                0,
                nil
            ),
            "swr_alloc_set_opts2"
        )
        try check(swr_init(context), "swr_init")
    }

    deinit {
        swr_free(&context)
        av_channel_layout_uninit(&outputLayout)
    }

    /// Converts `count` samples of `frame` starting at sample `offset`; returns the converted
    /// samples (possibly none: the resampler keeps some history).
    func convert(_ frame: UnsafeMutablePointer<AVFrame>, offset: Int32, count: Int32) throws -> Frame? {
        let planar = av_sample_fmt_is_planar(inputFormat) != 0
        let bytesPerSample = av_get_bytes_per_sample(inputFormat)
        let planes = planar ? Int(inputChannels) : 1
        let stride = Int(offset) * Int(bytesPerSample) * (planar ? 1 : Int(inputChannels))
        var inputs = [UnsafePointer<UInt8>?](repeating: nil, count: planes)
        for plane in 0..<planes {
            inputs[plane] = UnsafePointer(frame.pointee.extended_data[plane]! + stride)
        }
        return try inputs.withUnsafeMutableBufferPointer { buffer in
            try run(input: buffer.baseAddress, count: count)
        }
    }

    /// The samples still held by the resampler, at the end of the stream.
    func flush() throws -> Frame? { try run(input: nil, count: 0) }

    private func run(input: UnsafeMutablePointer<UnsafePointer<UInt8>?>?, count: Int32) throws -> Frame? {
        let capacity = swr_get_out_samples(context, count)
        guard capacity > 0 else { return nil }
        let output = try Frame.audio(
            samples: capacity,
            format: outputFormat,
            layout: &outputLayout,
            sampleRate: outputRate
        )
        let converted = try output.withPlanes { planes in
            try check(swr_convert(context, planes, capacity, input, count), "swr_convert")
        }
        guard converted > 0 else { return nil }
        output.sampleCount = converted
        return output
    }
}

/// A FIFO of audio samples (`AVAudioFifo`), to cut a stream into encoder-sized frames.
final class AudioFifo {
    private let fifo: OpaquePointer

    init(format: AVSampleFormat, channels: Int32) {
        guard let fifo = av_audio_fifo_alloc(format, channels, 4096) else {
            fatalError("av_audio_fifo_alloc: out of memory")
        }
        self.fifo = fifo
    }

    deinit { av_audio_fifo_free(fifo) }

    var count: Int32 { av_audio_fifo_size(fifo) }

    func write(_ frame: Frame) throws {
        let samples = frame.sampleCount
        _ = try frame.withPlanes { planes in
            try planes.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) {
                try check(av_audio_fifo_write(fifo, $0, samples), "av_audio_fifo_write")
            }
        }
    }

    /// Discards the oldest `count` samples.
    func drain(_ count: Int32) {
        if count > 0 { av_audio_fifo_drain(fifo, count) }
    }

    func read(into frame: Frame, count: Int32) throws {
        let read = try frame.withPlanes { planes in
            try planes.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 8) {
                try check(av_audio_fifo_read(fifo, $0, count), "av_audio_fifo_read")
            }
        }
        frame.sampleCount = read
    }
}
