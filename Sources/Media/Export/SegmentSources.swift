import CFFmpeg
import JobctlCore

/// One stream's packets, read as they are needed.
final class PacketSource {
    let asset: Asset
    let stream: Int
    let timeBase: AVRational

    init(_ asset: Asset, stream: Int) {
        self.asset = asset
        self.stream = stream
        timeBase = asset.input.stream(stream).pointee.time_base
    }

    func next() throws(MediaError) -> Packet? {
        while true {
            let packet = Packet()
            let result = asset.input.read(into: packet.pointer)
            if result == AVErr.eof { return nil }
            guard result >= 0 else {
                throw MediaError(
                    .decodeFailed,
                    "\(asset.displayName) could not be read for the join (\(FFError.message(for: result)))"
                )
            }
            if packet.streamIndex == stream { return packet }
        }
    }
}

/// The segments' video packets in order, each moved by its segment's offset.
final class SegmentSource {
    private let paths: [String]
    /// Where each segment starts in its file, its first frame (an IDR, later than the start
    /// when the source lost the segment's first frames) and its length (the rest is pre- and
    /// post-roll).
    private let windows: [(from: Int64, keyframe: Int64, length: Int64)]
    private let offsets: [Int64]
    private let decodeTimestamps: [[Int64]]
    private let durations: [[Int64: Int64]]
    private let limits: ResourceLimits
    private var index = -1
    private var position = 0
    private var current: PacketSource?

    init(
        _ paths: [String],
        windows: [(from: Int64, keyframe: Int64, length: Int64)],
        offsets: [Int64],
        decodeTimestamps: [[Int64]],
        durations: [[Int64: Int64]],
        limits: ResourceLimits
    ) {
        self.paths = paths
        self.windows = windows
        self.offsets = offsets
        self.decodeTimestamps = decodeTimestamps
        self.durations = durations
        self.limits = limits
    }

    func next() throws(MediaError) -> Packet? {
        while true {
            if let current, let packet = try current.next() {
                let window = windows[index]
                if position == 0, !(packet.isKeyframe && packet.pts == window.keyframe) { continue }
                guard packet.pts >= window.from, packet.pts - window.from < window.length else { continue }
                guard position < decodeTimestamps[index].count else {
                    throw MediaError(.encodeFailed, "segment \(index) changed while it was joined")
                }
                let pts = packet.pts - window.from
                packet.duration = durations[index][pts] ?? packet.duration
                packet.pts = pts + offsets[index]
                packet.dts = decodeTimestamps[index][position]
                position += 1
                return packet
            }
            index += 1
            position = 0
            guard index < paths.count else { return nil }
            let asset = try Asset(location: paths[index], limits: limits)
            guard let track = asset.primaryVideoTrack else {
                throw MediaError(.internalError, "segment \(index) lost its video track")
            }
            current = PacketSource(asset, stream: track.index)
        }
    }
}
