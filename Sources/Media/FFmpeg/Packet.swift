import CFFmpeg

/// An owned `AVPacket`. Moved between threads, never shared: once handed to a queue or the
/// muxer, the sender no longer touches it. (Sendable on that invariant: one owner at a time.)
final class Packet: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<AVPacket>

    init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        pointer = packet
    }

    deinit {
        var packet: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&packet)
    }

    /// A new packet taking over `source`'s payload; `source` is left blank.
    static func moving(from source: UnsafeMutablePointer<AVPacket>) -> Packet {
        let packet = Packet()
        av_packet_move_ref(packet.pointer, source)
        return packet
    }

    /// Its number in the order the demuxer handed packets out (`InputOrder`), from 1.
    var sequence: Int64 = 0
    /// No media: tells a reader output that its track's packets still to come have at least
    /// `sequence` (the track is idle in the file meanwhile).
    private(set) var isMarker = false

    static func marker(_ sequence: Int64) -> Packet {
        let packet = Packet()
        packet.sequence = sequence
        packet.isMarker = true
        return packet
    }

    var streamIndex: Int { Int(pointer.pointee.stream_index) }
    var pts: Int64 {
        get { pointer.pointee.pts }
        set { pointer.pointee.pts = newValue }
    }
    var dts: Int64 {
        get { pointer.pointee.dts }
        set { pointer.pointee.dts = newValue }
    }
    var duration: Int64 {
        get { pointer.pointee.duration }
        set { pointer.pointee.duration = newValue }
    }
    var isKeyframe: Bool { pointer.pointee.flags & AV_PKT_FLAG_KEY != 0 }
    /// Encrypted (Common Encryption in MP4: the demuxer attaches the sample's encryption info
    /// when it has no key); its payload cannot be decoded.
    var isEncrypted: Bool { av_packet_get_side_data(pointer, AV_PKT_DATA_ENCRYPTION_INFO, nil) != nil }

    /// `input_unsupported` for an encrypted packet of `track` in `asset`.
    static func encryptionError(track: Int, of asset: String) -> MediaError {
        MediaError(
            .inputUnsupported,
            "track \(track) of \(asset) is encrypted (DRM): jobctl cannot decrypt it; use the clear master"
        )
    }
    /// dts when set, pts otherwise: the order packets are decoded in.
    var decodeTimestamp: Int64 { dts != noPTS ? dts : pts }
}
