/// What a ladder's CMAF files hold, read from their boxes (ISO/IEC 14496-12) rather than
/// trusted from the muxer (issue 29): the tracks of an initialization segment (timescale, size,
/// the `CODECS` string from `avcC`/`hvcC`/`esds`, the `trex` defaults) and the samples of a
/// media segment (decode time, durations, sizes, sync flags, byte offsets). The playlists'
/// durations, bandwidths, I-frame byte ranges and the rules' checks come from here. Pure.
public enum FragmentedMP4 {
    public struct Problem: Error, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    public struct Track: Sendable, Hashable {
        public var id: UInt32
        /// `vide` or `soun` (or another handler, ignored by the ladder).
        public var handler: String
        public var timescale: UInt32
        public var codecs: String?
        public var width: Int?
        public var height: Int?
        public var channels: Int?
        public var sampleRate: Int?
        /// The `stsd` box's contents: the codec and its configuration (parameter sets), what
        /// segments encoded apart must share to be played as one stream.
        public var sampleDescription: [UInt8] = []
        var defaultDuration: UInt32 = 0
        var defaultSize: UInt32 = 0
        var defaultFlags: UInt32 = 0
    }

    public struct Sample: Sendable, Hashable {
        public var duration: UInt32
        public var size: UInt32
        public var isSync: Bool
        /// Where its bytes start in the segment file.
        public var offset: Int
        /// Presentation minus decode time, in the track's timescale.
        public var compositionOffset: Int64 = 0
    }

    /// One track's run of samples in a segment.
    public struct Fragment: Sendable, Hashable {
        public var trackID: UInt32
        public var baseDecodeTime: UInt64
        public var samples: [Sample]
        /// Where the `moof` holding it starts in the file.
        public var moofOffset: Int

        public var duration: UInt64 { samples.reduce(0) { $0 + UInt64($1.duration) } }
    }

    // MARK: Initialization segment

    public static func tracks(inInitialization bytes: [UInt8]) throws(Problem) -> [Track] {
        let top = try boxes(bytes, 0..<bytes.count)
        guard let moov = top.first(where: { $0.type == "moov" }) else { throw Problem("no moov box") }
        let inMoov = try boxes(bytes, moov.body)
        var defaults: [UInt32: (UInt32, UInt32, UInt32)] = [:]
        if let mvex = inMoov.first(where: { $0.type == "mvex" }) {
            for trex in try boxes(bytes, mvex.body) where trex.type == "trex" {
                let b = trex.body.lowerBound + 4
                guard trex.body.count >= 24 else { throw Problem("a trex box of \(trex.body.count) bytes") }
                defaults[u32(bytes, b)] = (u32(bytes, b + 8), u32(bytes, b + 12), u32(bytes, b + 16))
            }
        }
        var tracks: [Track] = []
        for trak in inMoov where trak.type == "trak" {
            let inTrak = try boxes(bytes, trak.body)
            guard let tkhd = inTrak.first(where: { $0.type == "tkhd" }),
                let mdia = inTrak.first(where: { $0.type == "mdia" })
            else { throw Problem("a trak without tkhd or mdia") }
            let id =
                bytes[tkhd.body.lowerBound] == 1
                ? u32(bytes, tkhd.body.lowerBound + 20) : u32(bytes, tkhd.body.lowerBound + 12)
            let inMdia = try boxes(bytes, mdia.body)
            guard let mdhd = inMdia.first(where: { $0.type == "mdhd" }),
                let hdlr = inMdia.first(where: { $0.type == "hdlr" }),
                let minf = inMdia.first(where: { $0.type == "minf" })
            else { throw Problem("track \(id): an mdia without mdhd, hdlr or minf") }
            let timescale =
                bytes[mdhd.body.lowerBound] == 1
                ? u32(bytes, mdhd.body.lowerBound + 20) : u32(bytes, mdhd.body.lowerBound + 12)
            let handler = fourCC(bytes, hdlr.body.lowerBound + 8)
            var track = Track(id: id, handler: handler, timescale: timescale)
            if let (duration, size, flags) = defaults[id] {
                (track.defaultDuration, track.defaultSize, track.defaultFlags) = (duration, size, flags)
            }
            let stsd = try path(bytes, minf.body, ["stbl", "stsd"])
            if let stsd, stsd.body.count > 8 {
                track.sampleDescription = Array(bytes[stsd.body])
                try describe(
                    &track,
                    entry: try boxes(bytes, (stsd.body.lowerBound + 8)..<stsd.body.upperBound).first,
                    bytes
                )
            }
            tracks.append(track)
        }
        return tracks
    }

    /// The sample entry's size and codec: avc1/avc3 (`avcC`), hvc1/hev1 (`hvcC`), mp4a (`esds`).
    static func describe(_ track: inout Track, entry: Box?, _ bytes: [UInt8]) throws(Problem) {
        guard let entry else { return }
        let start = entry.body.lowerBound
        switch entry.type {
        case "avc1", "avc3", "hvc1", "hev1":
            guard entry.body.count >= 78 else {
                throw Problem("a \(entry.type) sample entry of \(entry.body.count) bytes")
            }
            track.width = Int(u16(bytes, start + 24))
            track.height = Int(u16(bytes, start + 26))
            for child in try boxes(bytes, (start + 78)..<entry.body.upperBound) {
                let record = Array(bytes[child.body])
                do {
                    if child.type == "avcC" { track.codecs = try CodecStrings.avc(fromAVCC: record) }
                    if child.type == "hvcC" {
                        track.codecs = try CodecStrings.hevc(fromHVCC: record, sampleEntry: entry.type)
                    }
                } catch {
                    throw Problem("track \(track.id): \(error)")
                }
            }
        case "mp4a":
            guard entry.body.count >= 28 else { throw Problem("an mp4a sample entry of \(entry.body.count) bytes") }
            track.channels = Int(u16(bytes, start + 16))
            track.sampleRate = Int(u16(bytes, start + 24))
            if let esds = try boxes(bytes, (start + 28)..<entry.body.upperBound).first(where: { $0.type == "esds" }) {
                track.codecs = audioCodecs(Array(bytes[(esds.body.lowerBound + 4)..<esds.body.upperBound]))
            }
        default:
            break
        }
    }

    /// `mp4a.OO.A` from an ES descriptor: the object type (hex) and, for MPEG-4 audio, the audio
    /// object type of the decoder-specific info (2: AAC-LC).
    static func audioCodecs(_ descriptor: [UInt8]) -> String? {
        var index = 0
        func length() -> Int {
            var value = 0
            for _ in 0..<4 where index < descriptor.count {
                let byte = descriptor[index]
                index += 1
                value = value << 7 | Int(byte & 0x7F)
                if byte & 0x80 == 0 { break }
            }
            return value
        }
        guard descriptor.first == 0x03 else { return nil }
        index = 1
        _ = length()
        guard index + 3 <= descriptor.count else { return nil }
        let flags = descriptor[index + 2]
        index += 3
        if flags & 0x80 != 0 { index += 2 }
        if flags & 0x40 != 0, index < descriptor.count { index += 1 + Int(descriptor[index]) }
        if flags & 0x20 != 0 { index += 2 }
        guard index < descriptor.count, descriptor[index] == 0x04 else { return nil }
        index += 1
        _ = length()
        guard index + 13 <= descriptor.count else { return nil }
        let objectType = descriptor[index]
        index += 13
        let hex = CodecStrings.hex2(objectType).lowercased()
        guard objectType == 0x40, index < descriptor.count, descriptor[index] == 0x05 else { return "mp4a.\(hex)" }
        index += 1
        _ = length()
        guard index < descriptor.count else { return "mp4a.\(hex)" }
        var audioObjectType = Int(descriptor[index] >> 3)
        if audioObjectType == 31, index + 1 < descriptor.count {
            audioObjectType = 32 + Int((descriptor[index] & 0x07) << 3 | descriptor[index + 1] >> 5)
        }
        return "mp4a.\(hex).\(audioObjectType)"
    }

    // MARK: Media segment

    /// Every track fragment of a media segment, in file order.
    public static func fragments(inSegment bytes: [UInt8], tracks: [Track]) throws(Problem) -> [Fragment] {
        var fragments: [Fragment] = []
        for moof in try boxes(bytes, 0..<bytes.count) where moof.type == "moof" {
            let moofStart = moof.body.lowerBound - moof.headerSize
            for traf in try boxes(bytes, moof.body) where traf.type == "traf" {
                fragments.append(try fragment(traf, moofStart: moofStart, bytes, tracks: tracks))
            }
        }
        return fragments
    }

    static func fragment(_ traf: Box, moofStart: Int, _ bytes: [UInt8], tracks: [Track]) throws(Problem) -> Fragment {
        let children = try boxes(bytes, traf.body)
        guard let tfhd = children.first(where: { $0.type == "tfhd" }), tfhd.body.count >= 8 else {
            throw Problem("a traf without tfhd")
        }
        let tfhdFlags = u32(bytes, tfhd.body.lowerBound) & 0xFF_FFFF
        let trackID = u32(bytes, tfhd.body.lowerBound + 4)
        guard let track = tracks.first(where: { $0.id == trackID }) else {
            throw Problem("a fragment of track \(trackID), which the initialization segment does not have")
        }
        var cursor = tfhd.body.lowerBound + 8
        var base = moofStart
        var (duration, size, flags) = (track.defaultDuration, track.defaultSize, track.defaultFlags)
        if tfhdFlags & 0x1 != 0 {
            base = Int(u64(bytes, cursor))
            cursor += 8
        }
        if tfhdFlags & 0x2 != 0 { cursor += 4 }
        if tfhdFlags & 0x8 != 0 {
            duration = u32(bytes, cursor)
            cursor += 4
        }
        if tfhdFlags & 0x10 != 0 {
            size = u32(bytes, cursor)
            cursor += 4
        }
        if tfhdFlags & 0x20 != 0 { flags = u32(bytes, cursor) }
        var baseDecodeTime: UInt64 = 0
        if let tfdt = children.first(where: { $0.type == "tfdt" }) {
            baseDecodeTime =
                bytes[tfdt.body.lowerBound] == 1
                ? u64(bytes, tfdt.body.lowerBound + 4) : UInt64(u32(bytes, tfdt.body.lowerBound + 4))
        }
        var samples: [Sample] = []
        var dataEnd = base
        for trun in children where trun.type == "trun" {
            let trunFlags = u32(bytes, trun.body.lowerBound) & 0xFF_FFFF
            let signedOffsets = bytes[trun.body.lowerBound] >= 1
            let count = Int(u32(bytes, trun.body.lowerBound + 4))
            var at = trun.body.lowerBound + 8
            var offset = dataEnd
            if trunFlags & 0x1 != 0 {
                offset = base + Int(Int32(bitPattern: u32(bytes, at)))
                at += 4
            }
            var firstFlags: UInt32?
            if trunFlags & 0x4 != 0 {
                firstFlags = u32(bytes, at)
                at += 4
            }
            let fields = [0x100, 0x200, 0x400, 0x800].filter { trunFlags & UInt32($0) != 0 }.count
            guard count >= 0, at + count * fields * 4 <= trun.body.upperBound else {
                throw Problem("track \(trackID): a trun of \(count) samples does not fit its box")
            }
            for index in 0..<count {
                var sample = Sample(duration: duration, size: size, isSync: false, offset: offset)
                var sampleFlags = index == 0 ? (firstFlags ?? flags) : flags
                if trunFlags & 0x100 != 0 {
                    sample.duration = u32(bytes, at)
                    at += 4
                }
                if trunFlags & 0x200 != 0 {
                    sample.size = u32(bytes, at)
                    at += 4
                }
                if trunFlags & 0x400 != 0 {
                    sampleFlags = u32(bytes, at)
                    at += 4
                }
                if trunFlags & 0x800 != 0 {
                    let raw = u32(bytes, at)
                    sample.compositionOffset = signedOffsets ? Int64(Int32(bitPattern: raw)) : Int64(raw)
                    at += 4
                }
                sample.isSync = sampleFlags & 0x1_0000 == 0
                offset += Int(sample.size)
                samples.append(sample)
            }
            dataEnd = offset
        }
        return Fragment(trackID: trackID, baseDecodeTime: baseDecodeTime, samples: samples, moofOffset: moofStart)
    }

    // MARK: Boxes

    struct Box {
        var type: String
        var body: Range<Int>
        var headerSize: Int
    }

    /// The boxes laid end to end in `range`.
    static func boxes(_ bytes: [UInt8], _ range: Range<Int>) throws(Problem) -> [Box] {
        var found: [Box] = []
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            var size = Int(u32(bytes, at))
            var header = 8
            if size == 1 {
                guard at + 16 <= range.upperBound else { throw Problem("a box's 64-bit size is cut off") }
                size = Int(clamping: u64(bytes, at + 8))
                header = 16
            } else if size == 0 {
                size = range.upperBound - at
            }
            guard size >= header, at + size <= range.upperBound else {
                throw Problem("a \(fourCC(bytes, at + 4)) box of \(size) bytes runs past its container")
            }
            found.append(Box(type: fourCC(bytes, at + 4), body: (at + header)..<(at + size), headerSize: header))
            at += size
        }
        return found
    }

    static func path(_ bytes: [UInt8], _ range: Range<Int>, _ types: [String]) throws(Problem) -> Box? {
        var range = range
        var box: Box?
        for type in types {
            guard let next = try boxes(bytes, range).first(where: { $0.type == type }) else { return nil }
            box = next
            range = next.body
        }
        return box
    }

    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        guard at + 2 <= bytes.count else { return 0 }
        return UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        guard at + 4 <= bytes.count else { return 0 }
        return bytes[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        guard at + 8 <= bytes.count else { return 0 }
        return bytes[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func fourCC(_ bytes: [UInt8], _ at: Int) -> String {
        guard at + 4 <= bytes.count else { return "" }
        return String(decoding: bytes[at..<(at + 4)], as: UTF8.self)
    }
}
