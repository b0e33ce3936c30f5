import Foundation

/// Rewrites the headers of files the ffmpeg CLI wrote so that they claim another length than
/// their media holds, as real files do (issue 42): an MP3's Xing/Info frame count or a VBRI
/// header in its place, an APE tag after the audio, a FLAC's STREAMINFO total, an Ogg stream's
/// last granule position. The media itself is left as it was (every checksum still matches).
public enum LyingHeaders {
    /// Sets the frame count of the MP3's Xing or Info header (the first frame's).
    public static func setXingFrames(_ data: inout Data, to frames: UInt32) {
        let first = firstMPEGFrame(data)
        let window = first..<min(data.count, first + 200)
        guard let tag = data.range(of: Data("Xing".utf8), in: window) ?? data.range(of: Data("Info".utf8), in: window)
        else { preconditionFailure("no Xing or Info header in the first frame") }
        let flags = data[tag.upperBound..<tag.upperBound + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        precondition(flags & 1 == 1, "the Xing header has no frame count")
        replace(&data, at: tag.upperBound + 4, big: frames)
    }

    /// Replaces the MP3's Xing/Info header by a VBRI header (as Fraunhofer's encoder writes it,
    /// 32 bytes after the first frame's header) that counts `frames` frames.
    public static func replaceXingByVBRI(_ data: inout Data, frames: UInt32) {
        let first = firstMPEGFrame(data)
        let window = first..<min(data.count, first + 200)
        if let tag = data.range(of: Data("Xing".utf8), in: window) ?? data.range(of: Data("Info".utf8), in: window) {
            data.replaceSubrange(tag, with: [0, 0, 0, 0])
        }
        var vbri = Data("VBRI".utf8)
        for value: UInt16 in [1, 0, 75] { vbri.append(big: value) }  // version, delay, quality
        vbri.append(big: UInt32(data.count))
        vbri.append(big: frames)
        for value: UInt16 in [0, 1, 1, 1] { vbri.append(big: value) }  // no table of contents
        data.replaceSubrange(first + 36..<first + 36 + vbri.count, with: vbri)
    }

    /// Appends an APEv2 tag (header, a binary cover item of `coverBytes`, a title, footer), as
    /// taggers append them to MP3s: FFmpeg counts its bytes into the bitrate estimate.
    public static func appendAPETag(_ data: inout Data, coverBytes: Int) {
        var items = Data()
        let cover = Data((0..<coverBytes).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        items.append(little: UInt32(cover.count))
        items.append(little: UInt32(2))  // binary
        items.append(Data("Cover Art (Front)\0".utf8) + cover)
        items.append(little: UInt32(5))
        items.append(little: UInt32(0))
        items.append(Data("Title\0hello".utf8))
        func frame(_ flags: UInt32) -> Data {
            var bytes = Data("APETAGEX".utf8)
            for value: UInt32 in [2000, UInt32(items.count + 32), 2, flags] { bytes.append(little: value) }
            return bytes + Data(count: 8)
        }
        data.append(frame(0xA000_0000) + items + frame(0x8000_0000))
    }

    /// Sets the total sample count of a FLAC file's STREAMINFO (36 bits).
    public static func setFLACTotalSamples(_ data: inout Data, to total: UInt64) {
        precondition(data.prefix(4) == Data("fLaC".utf8))
        let at = 8 + 10  // after "fLaC", the block header and the block and frame sizes
        let packed = data[at..<at + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        replace(&data, at: at, big: packed & ~((1 << 36) - 1) | total & ((1 << 36) - 1))
    }

    /// Moves the granule position of an Ogg file's last page `samples` further (the page's CRC
    /// recomputed): the stream then claims to end later than its packets do.
    public static func extendLastGranule(_ data: inout Data, by samples: Int64) {
        var page = 0
        var last = 0
        while page + 27 <= data.count, data[page..<page + 4] == Data("OggS".utf8) {
            last = page
            let segments = Int(data[page + 26])
            page += 27 + segments + data[page + 27..<page + 27 + segments].reduce(0) { $0 + Int($1) }
        }
        let granule = data[last + 6..<last + 14].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        replace(&data, at: last + 6, little: granule + samples)
        replace(&data, at: last + 22, little: UInt32(0))
        replace(&data, at: last + 22, little: oggCRC(data[last..<page]))
    }

    /// One FLAC stream from several (the same rate, channels and depth, each encoded with its
    /// own block size): their frames in order, re-numbered with the variable block size
    /// strategy (each frame header carries its first sample's number), every CRC recomputed; the
    /// first file's metadata, with STREAMINFO's block sizes and total updated.
    public static func variableBlockFLAC(_ parts: [Data]) -> Data {
        var frames: [(header: FLACFrameHeader, body: Data)] = []
        for part in parts {
            for frame in flacFrames(part) { frames.append(frame) }
        }
        var output = flacMetadata(parts[0])
        var sample: UInt64 = 0
        for (header, body) in frames {
            var rewritten = Data([0xFF, 0xF9, header.sizeAndRate, header.channelsAndDepth])
            rewritten.append(utf8Coded(sample))
            rewritten.append(header.extra)
            rewritten.append(crc8(rewritten))
            rewritten.append(body)
            let crc = crc16(rewritten)
            rewritten.append(big: crc)
            output.append(rewritten)
            sample += UInt64(header.blockSize)
        }
        let sizes = frames.map(\.header.blockSize)
        let streamInfo = 8
        replace(&output, at: streamInfo, big: UInt16(sizes.dropLast().min() ?? sizes[0]))
        replace(&output, at: streamInfo + 2, big: UInt16(sizes.max() ?? sizes[0]))
        setFLACTotalSamples(&output, to: sample)
        output.replaceSubrange(streamInfo + 18..<streamInfo + 34, with: Data(count: 16))  // MD5 unknown
        return output
    }

    // MARK: -

    struct FLACFrameHeader {
        var sizeAndRate: UInt8
        var channelsAndDepth: UInt8
        /// The block size and sample rate bytes that follow the coded number, if any.
        var extra: Data
        var blockSize: Int
    }

    private static func firstMPEGFrame(_ data: Data) -> Int {
        guard data.prefix(3) == Data("ID3".utf8) else { return 0 }
        return 10 + data[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
    }

    /// The metadata blocks of a FLAC file, from "fLaC" to its first frame.
    private static func flacMetadata(_ data: Data) -> Data {
        var at = 4
        while true {
            let last = data[at] & 0x80 != 0
            at += 4 + data[at + 1..<at + 4].reduce(0) { $0 << 8 | Int($1) }
            if last { return data.prefix(at) }
        }
    }

    /// A FLAC file's frames: each header, and what follows it up to (not with) the frame's CRC.
    private static func flacFrames(_ data: Data) -> [(header: FLACFrameHeader, body: Data)] {
        let bytes = [UInt8](data)
        var starts: [(at: Int, header: FLACFrameHeader, length: Int)] = []
        var at = flacMetadata(data).count
        while at < bytes.count {
            guard let (header, length) = frameHeader(bytes, at) else { preconditionFailure("no FLAC frame at \(at)") }
            starts.append((at, header, length))
            // The frame ends where the next valid header begins and the bytes so far check out.
            var end = at + length + 2
            while end < bytes.count {
                if bytes[end] == 0xFF, frameHeader(bytes, end) != nil, crc16(Data(bytes[at..<end])) == 0 { break }
                end += 1
            }
            at = end
        }
        return starts.enumerated().map { index, start in
            let end = index + 1 < starts.count ? starts[index + 1].at : bytes.count
            return (start.header, Data(bytes[start.at + start.length..<end - 2]))
        }
    }

    /// The header at `at` (fixed block size strategy) and its length with its CRC-8.
    private static func frameHeader(_ bytes: [UInt8], _ at: Int) -> (FLACFrameHeader, Int)? {
        guard at + 6 < bytes.count, bytes[at] == 0xFF, bytes[at + 1] == 0xF8 else { return nil }
        let first = bytes[at + 4]
        let numberLength = first < 0x80 ? 1 : (first < 0xE0 ? 2 : first < 0xF0 ? 3 : first < 0xF8 ? 4 : 5)
        let sizeCode = Int(bytes[at + 2] >> 4)
        let rateCode = Int(bytes[at + 2] & 0x0F)
        let extraLength = (sizeCode == 6 ? 1 : sizeCode == 7 ? 2 : 0) + (rateCode == 12 ? 1 : rateCode >= 13 ? 2 : 0)
        let length = 4 + numberLength + extraLength + 1
        guard at + length <= bytes.count, crc8(Data(bytes[at..<at + length - 1])) == bytes[at + length - 1] else {
            return nil
        }
        let extraStart = at + 4 + numberLength
        let extra = Data(bytes[extraStart..<extraStart + extraLength])
        let blockSize =
            switch sizeCode {
            case 1: 192
            case 2...5: 576 << (sizeCode - 2)
            case 6: Int(extra[extra.startIndex]) + 1
            case 7: (Int(extra[extra.startIndex]) << 8 | Int(extra[extra.startIndex + 1])) + 1
            default: 256 << (sizeCode - 8)
            }
        return (
            FLACFrameHeader(
                sizeAndRate: bytes[at + 2],
                channelsAndDepth: bytes[at + 3],
                extra: extra,
                blockSize: blockSize
            ), length
        )
    }

    /// FLAC's "UTF-8" coding of a number of up to 36 bits.
    private static func utf8Coded(_ value: UInt64) -> Data {
        if value < 0x80 { return Data([UInt8(value)]) }
        let continuation = value < 0x800 ? 1 : value < 0x1_0000 ? 2 : value < 0x20_0000 ? 3 : value < 0x400_0000 ? 4 : 5
        let lead = UInt8((0xFF00 >> (continuation + 1)) & 0xFF) | UInt8(value >> (6 * UInt64(continuation)))
        return Data([lead] + (0..<continuation).reversed().map { UInt8(0x80 | (value >> (6 * UInt64($0))) & 0x3F) })
    }

    private static func crc8(_ data: Data) -> UInt8 {
        data.reduce(UInt8(0)) { crc, byte in
            (0..<8).reduce(crc ^ byte) { value, _ in value & 0x80 != 0 ? value << 1 ^ 0x07 : value << 1 }
        }
    }

    private static func crc16(_ data: Data) -> UInt16 {
        data.reduce(UInt16(0)) { crc, byte in
            (0..<8).reduce(crc ^ UInt16(byte) << 8) { value, _ in value & 0x8000 != 0 ? value << 1 ^ 0x8005 : value << 1
            }
        }
    }

    private static func oggCRC(_ data: Data) -> UInt32 {
        data.reduce(UInt32(0)) { crc, byte in
            (0..<8).reduce(crc ^ UInt32(byte) << 24) { value, _ in
                value & 0x8000_0000 != 0 ? value << 1 ^ 0x04C1_1DB7 : value << 1
            }
        }
    }

    private static func replace<Value: FixedWidthInteger>(_ data: inout Data, at offset: Int, big value: Value) {
        withUnsafeBytes(of: value.bigEndian) { data.replaceSubrange(offset..<offset + $0.count, with: $0) }
    }

    private static func replace<Value: FixedWidthInteger>(_ data: inout Data, at offset: Int, little value: Value) {
        withUnsafeBytes(of: value.littleEndian) { data.replaceSubrange(offset..<offset + $0.count, with: $0) }
    }
}
