import Foundation

/// Min/max peaks per pixel column, in the format of BBC audiowaveform (and peaks.js): the JSON
/// format version 2 and the binary `.dat` format (version 1 for one channel, 2 for more).
///
/// `data` holds, for each point, for each channel, the minimum then the maximum, as 16-bit
/// values; 8-bit output divides them by 256 (rounding toward zero, as audiowaveform does).
public struct WaveformData: Sendable, Hashable {
    public var sampleRate: Int
    public var samplesPerPixel: Int
    public var channels: Int
    /// Points per channel.
    public var length: Int { channels == 0 ? 0 : data.count / (2 * channels) }
    public var data: [Int16]

    public init(sampleRate: Int, samplesPerPixel: Int, channels: Int, data: [Int16]) {
        self.sampleRate = sampleRate
        self.samplesPerPixel = samplesPerPixel
        self.channels = channels
        self.data = data
    }

    /// The values at `bits` (8 or 16).
    public func values(bits: Int) -> [Int] {
        bits == 8 ? data.map { Int($0) / 256 } : data.map { Int($0) }
    }

    /// The JSON format version 2: `{version, channels, sample_rate, samples_per_pixel, bits,
    /// length, data}`.
    public func json(bits: Int) -> [UInt8] {
        Self.collect { write throws(MediaError) in try writeJSON(bits: bits, to: write) }
    }

    /// The binary format: little-endian `int32 version` (1 for one channel, 2 for more),
    /// `uint32 flags` (bit 0: 8-bit), `int32 sample_rate`, `int32 samples_per_pixel`,
    /// `uint32 length`, then (version 2) `int32 channels`, then the values as int8 or int16.
    public func dat(bits: Int) -> [UInt8] {
        Self.collect { write throws(MediaError) in try writeDat(bits: bits, to: write) }
    }

    /// A chunk writer: takes each piece of a file in turn.
    public typealias ChunkWriter = ([UInt8]) throws(MediaError) -> Void

    /// The JSON file, handed to `write` in pieces of about 64 KB (a long waveform's text is
    /// never whole in memory).
    public func writeJSON(bits: Int, to write: ChunkWriter) throws(MediaError) {
        var buffer = Array(
            ("{\"version\":2,\"channels\":\(channels),\"sample_rate\":\(sampleRate),"
                + "\"samples_per_pixel\":\(samplesPerPixel),\"bits\":\(bits),\"length\":\(length),\"data\":[").utf8
        )
        buffer.reserveCapacity(Self.chunk + 16)
        for (index, value) in data.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: ",")) }
            Self.appendDecimal(bits == 8 ? Int(value) / 256 : Int(value), to: &buffer)
            if buffer.count >= Self.chunk {
                try write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        buffer.append(contentsOf: Array("]}\n".utf8))
        try write(buffer)
    }

    /// The `.dat` file, handed to `write` in pieces of about 64 KB.
    public func writeDat(bits: Int, to write: ChunkWriter) throws(MediaError) {
        // The header's fields are signed 32-bit (audiowaveform reads int32): refused, never
        // trapped on, whatever a job row held.
        var header: [Int32] = [channels > 1 ? 2 : 1, bits == 8 ? 1 : 0]
        for (name, value) in [
            ("sample rate", sampleRate), ("samples per pixel", samplesPerPixel), ("length", length),
        ] + (channels > 1 ? [("channels", channels)] : []) {
            guard let field = Int32(exactly: value), field >= 0 else {
                throw MediaError(.limitExceeded, "the waveform's \(name) (\(value)) does not fit a .dat file's header")
            }
            header.append(field)
        }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(Self.chunk + 4)
        for field in header { withUnsafeBytes(of: field.littleEndian) { buffer.append(contentsOf: $0) } }
        for value in data {
            if bits == 8 {
                buffer.append(UInt8(bitPattern: Int8(Int(value) / 256)))
            } else {
                withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
            }
            if buffer.count >= Self.chunk {
                try write(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try write(buffer)
    }

    private static let chunk = 1 << 16

    private static func appendDecimal(_ value: Int, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0)  // |Int16| has at most 5
        var count = 0
        repeat {
            withUnsafeMutableBytes(of: &digits) { $0[count] = UInt8(ascii: "0") + UInt8(magnitude % 10) }
            magnitude /= 10
            count += 1
        } while magnitude > 0
        withUnsafeBytes(of: &digits) { bytes in
            for index in stride(from: count - 1, through: 0, by: -1) { buffer.append(bytes[index]) }
        }
    }

    private static func collect(_ produce: (ChunkWriter) throws(MediaError) -> Void) -> [UInt8] {
        var bytes: [UInt8] = []
        do throws(MediaError) {
            try produce { chunk throws(MediaError) in bytes.append(contentsOf: chunk) }
        } catch {
            preconditionFailure("collecting in memory cannot fail")
        }
        return bytes
    }
}

/// Accumulates 16-bit samples into min/max points: `samplesPerPixel` frames per point, the
/// channels averaged (their sum divided by their count, toward zero) or kept apart. Memory is
/// the points, flat in the input's length.
struct PeakAccumulator {
    let channels: Int
    let split: Bool
    let samplesPerPixel: Int
    private(set) var data: [Int16] = []
    private var minimum: [Int32]
    private var maximum: [Int32]
    private var count = 0

    init(channels: Int, split: Bool, samplesPerPixel: Int) {
        self.channels = channels
        self.split = split
        self.samplesPerPixel = samplesPerPixel
        let outputs = split ? channels : 1
        minimum = Array(repeating: Int32(Int16.max), count: outputs)
        maximum = Array(repeating: Int32(Int16.min), count: outputs)
    }

    /// Takes `frames` frames of planar float samples (one plane per channel), each converted to
    /// 16 bits as FFmpeg's resampler converts float to s16. The hot loop of a waveform: it runs
    /// column by column with the column's minimum and maximum in locals.
    mutating func add(planes: UnsafePointer<UnsafeMutablePointer<UInt8>?>, frames: Int) {
        // Each plane bound to floats once per frame, not per sample.
        let samples = (0..<channels).map { UnsafeRawPointer(planes[$0]!).assumingMemoryBound(to: Float.self) }
        var frame = 0
        while frame < frames {
            let end = frame + min(frames - frame, samplesPerPixel - count)
            if split {
                for channel in 0..<channels {
                    let plane = samples[channel]
                    var (low, high) = (minimum[channel], maximum[channel])
                    for index in frame..<end {
                        let sample = Self.sixteenBit(plane[index])
                        low = Swift.min(low, sample)
                        high = Swift.max(high, sample)
                    }
                    (minimum[channel], maximum[channel]) = (low, high)
                }
            } else if channels == 2 {
                let (left, right) = (samples[0], samples[1])
                var (low, high) = (minimum[0], maximum[0])
                for index in frame..<end {
                    let sample = (Self.sixteenBit(left[index]) + Self.sixteenBit(right[index])) / 2
                    low = Swift.min(low, sample)
                    high = Swift.max(high, sample)
                }
                (minimum[0], maximum[0]) = (low, high)
            } else {
                var (low, high) = (minimum[0], maximum[0])
                for index in frame..<end {
                    var sum: Int32 = 0
                    for plane in samples { sum += Self.sixteenBit(plane[index]) }
                    let sample = sum / Int32(channels)
                    low = Swift.min(low, sample)
                    high = Swift.max(high, sample)
                }
                (minimum[0], maximum[0]) = (low, high)
            }
            count += end - frame
            frame = end
            if count == samplesPerPixel { emit() }
        }
    }

    /// The last, partial column (kept, as audiowaveform does).
    mutating func finish() {
        if count > 0 { emit() }
    }

    private mutating func emit() {
        for output in minimum.indices {
            data.append(Int16(minimum[output]))
            data.append(Int16(maximum[output]))
            minimum[output] = Int32(Int16.max)
            maximum[output] = Int32(Int16.min)
        }
        count = 0
    }

    /// Float to 16 bits as swresample converts: `lrintf(x * 32768)` (to nearest, ties to even),
    /// clipped; clipping first gives the same result and keeps the conversion in range. What
    /// `lrintf` cannot represent (NaN, infinities, beyond 2^63) it makes the most negative
    /// value, and so does this.
    @inline(__always)
    static func sixteenBit(_ value: Float) -> Int32 {
        let scaled = value * 32768
        guard scaled.isFinite && scaled.magnitude < 0x1p63 else { return Int32(Int16.min) }
        return Int32(Swift.min(Swift.max(scaled, -32768), 32767).rounded(.toNearestOrEven))
    }
}
