import CFFmpeg

/// Draws waveform peaks as a PNG (encoded by libavcodec): one vertical line per column from
/// the column's minimum to its maximum, each channel in its own band.
enum WaveformRenderer {
    static func png(_ data: WaveformData, _ picture: WaveformPicture) throws(MediaError) -> [UInt8] {
        guard picture.width > 0, picture.height > 0, picture.width <= 16384, picture.height <= 16384,
            let background = rgb(picture.background), let color = rgb(picture.color)
        else {
            throw MediaError(.internalError, "invalid waveform picture \(picture.width)x\(picture.height)")
        }
        let frame: Frame
        do {
            frame = try Frame.video(
                width: Int32(picture.width),
                height: Int32(picture.height),
                format: AV_PIX_FMT_RGB24
            )
        } catch {
            throw MediaError(.encodeFailed, "allocating a \(picture.width)x\(picture.height) picture failed")
        }
        let stride = frame.linesize(0)
        let pixels = frame.plane(0)
        for row in 0..<picture.height {
            for column in 0..<picture.width { set(pixels + row * stride + column * 3, background) }
        }
        let channels = max(1, data.channels)
        let band = picture.height / channels
        let length = data.length
        if length > 0 && band > 0 {
            for column in 0..<picture.width {
                // The points under this column: at least one (a short input is stretched).
                let first = column * length / picture.width
                let last = max(first + 1, (column + 1) * length / picture.width)
                for channel in 0..<channels {
                    var low = Int(Int16.max)
                    var high = Int(Int16.min)
                    for point in first..<min(last, length) {
                        low = min(low, Int(data.data[(point * channels + channel) * 2]))
                        high = max(high, Int(data.data[(point * channels + channel) * 2 + 1]))
                    }
                    let top = channel * band
                    func y(_ value: Int) -> Int {
                        let offset = (32767 - value) * (band - 1) / 65535
                        return top + min(band - 1, max(0, offset))
                    }
                    for row in y(high)...y(low) { set(pixels + row * stride + column * 3, color) }
                }
            }
        }
        return try ImageEncoder.encode(frame, as: .png)
    }

    private static func set(_ pixel: UnsafeMutablePointer<UInt8>, _ color: (UInt8, UInt8, UInt8)) {
        pixel[0] = color.0
        pixel[1] = color.1
        pixel[2] = color.2
    }

    /// `RRGGBB`. A request may write `#RRGGBB`: `WaveformKind` drops the `#` as it reads it,
    /// so every front end (the API, `submit`, `jobctl waveform`) reads colours by one rule.
    static func rgb(_ hex: String) -> (UInt8, UInt8, UInt8)? {
        guard hex.count == 6, let value = UInt32(hex, radix: 16) else { return nil }
        return (UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF))
    }
}
