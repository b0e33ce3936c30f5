import Foundation

/// DSD audio files written by hand (no tool here writes them; FFmpeg only reads them): DSF
/// (Sony's DSD Stream File) and DFF (Philips' DSDIFF), two channels of 1-bit DSD64
/// (2.8224 MHz) from a second-order sigma-delta modulator: a 440 Hz tone on the left, 660 Hz
/// on the right, at half of full scale (an RMS level of -9 dB once decoded).
public enum DSDFiles {
    public static let rate = 2_822_400

    /// A DSF file of `seconds`.
    public static func dsf(seconds: Double) -> Data {
        let count = samples(seconds)
        let channels = [modulate(count, frequency: 440), modulate(count, frequency: 660)]
            .map { pack($0, leastSignificantFirst: true) }
        // Data: blocks of 4096 bytes per channel, channel after channel, the last one padded.
        let block = 4096
        var audio = Data()
        for start in stride(from: 0, to: channels[0].count, by: block) {
            for channel in channels {
                let piece = channel[start..<min(start + block, channel.count)]
                audio.append(contentsOf: piece)
                audio.append(contentsOf: [UInt8](repeating: 0, count: block - piece.count))
            }
        }
        var format = Data("fmt ".utf8)
        format.append(little: UInt64(52))
        for value: UInt32 in [1, 0, 2, 2, UInt32(rate), 1] { format.append(little: value) }  // version, DSD raw, stereo
        format.append(little: UInt64(count))  // samples per channel
        format.append(little: UInt32(block))
        format.append(little: UInt32(0))
        var data = Data("data".utf8)
        data.append(little: UInt64(12 + audio.count))
        data.append(audio)
        var file = Data("DSD ".utf8)
        file.append(little: UInt64(28))
        file.append(little: UInt64(28 + format.count + data.count))
        file.append(little: UInt64(0))  // no metadata chunk
        return file + format + data
    }

    /// A DFF (DSDIFF 1.5) file of `seconds`, uncompressed: the channels' bytes interleaved.
    public static func dff(seconds: Double) -> Data {
        let count = samples(seconds)
        let left = pack(modulate(count, frequency: 440), leastSignificantFirst: false)
        let right = pack(modulate(count, frequency: 660), leastSignificantFirst: false)
        var interleaved = [UInt8](repeating: 0, count: left.count * 2)
        for index in left.indices {
            interleaved[2 * index] = left[index]
            interleaved[2 * index + 1] = right[index]
        }
        func chunk(_ id: String, _ body: Data) -> Data {
            var bytes = Data(id.utf8)
            bytes.append(big: UInt64(body.count))
            bytes.append(body)
            if body.count % 2 == 1 { bytes.append(0) }
            return bytes
        }
        var version = Data()
        version.append(big: UInt32(0x0105_0000))
        var sampleRate = Data()
        sampleRate.append(big: UInt32(rate))
        var channelIDs = Data()
        channelIDs.append(big: UInt16(2))
        channelIDs.append(Data("SLFTSRGT".utf8))
        let name = Data("not compressed".utf8)
        let compression = Data("DSD ".utf8) + Data([UInt8(name.count)]) + name
        let properties =
            Data("SND ".utf8) + chunk("FS  ", sampleRate) + chunk("CHNL", channelIDs) + chunk("CMPR", compression)
        let body =
            Data("DSD ".utf8) + chunk("FVER", version) + chunk("PROP", properties) + chunk("DSD ", Data(interleaved))
        return chunk("FRM8", body)
    }

    private static func samples(_ seconds: Double) -> Int { Int(Double(rate) * seconds) / 8 * 8 }

    /// One bit per sample (true: +1), a second-order sigma-delta modulation of a sine.
    private static func modulate(_ count: Int, frequency: Double) -> [Bool] {
        var bits = [Bool](repeating: false, count: count)
        var first = 0.0
        var second = 0.0
        var output = 1.0
        let step = 2 * Double.pi * frequency / Double(rate)
        for index in 0..<count {
            first += 0.5 * sin(step * Double(index)) - output
            second += first - output
            output = second >= 0 ? 1 : -1
            bits[index] = second >= 0
        }
        return bits
    }

    private static func pack(_ bits: [Bool], leastSignificantFirst: Bool) -> [UInt8] {
        stride(from: 0, to: bits.count, by: 8).map { start in
            (0..<8).reduce(UInt8(0)) { byte, offset in
                guard bits[start + offset] else { return byte }
                return byte | (leastSignificantFirst ? UInt8(1) << offset : UInt8(0x80) >> offset)
            }
        }
    }
}

extension Data {
    mutating func append<Value: FixedWidthInteger>(little value: Value) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    mutating func append<Value: FixedWidthInteger>(big value: Value) {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
    }
}
