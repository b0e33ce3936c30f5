import CFFmpeg

/// Finds, in one forward pass over one video track, the frame for each of a sorted list of
/// times: the image generator's engine.
///
/// A frame is acceptable for time `t` when the interval it is displayed in — from its own
/// timestamp to the next frame's — meets `[t - toleranceBefore, t + toleranceAfter]`. With zero
/// tolerances that is exactly the frame displayed at `t`; with the default (infinite) ones, the
/// first frame decoded after a seek (a keyframe) is taken at once. With a `start` (a range's),
/// no frame is taken that is gone from the screen by then: a keyframe before a range is not an
/// image of it, whatever the tolerance.
///
/// It seeks only when the next time is far ahead: when the container's index shows a keyframe
/// between the last decoded frame and that time, or, without an index, when the time is more
/// than `unindexedSeekDistance` ahead. Otherwise it decodes forward. It never seeks back.
final class FrameLocator {
    /// A time to find a frame for (µs, absolute), with the caller's number for it.
    struct Target {
        var id: Int
        var time: Int64
    }

    /// Without an index, a time this far ahead is reached by seeking (5 s: longer than the
    /// keyframe interval of nearly every real file) rather than by decoding.
    static let unindexedSeekDistance: Int64 = 5_000_000

    private let asset: Asset
    private let streamIndex: Int
    private let timeBase: AVRational
    private let decoding: DecodeLoop
    private let decoder: CodecDecoder
    private let toleranceBefore: Int64
    private let toleranceAfter: Int64
    /// Exclusive end of what may be returned (µs, absolute); `nil`: the end of the input.
    private let end: Int64?
    /// The earliest instant a returned frame must still be shown at (µs, absolute).
    private let start: Int64
    private let defaultDuration: Int64

    /// The last decoded frame and its time (µs): displayed until the next one.
    private var held: (frame: Frame, time: Int64)?
    /// The time of the last decoded frame, or of the keyframe a seek landed on.
    private var position: Int64?
    /// After a seek: frames before the keyframe (leading pictures of an open GOP) are dropped.
    private var minimumTime: Int64 = .min
    /// After a seek: packets before the keyframe cannot be decoded cleanly.
    private var waitingForKeyframe = false
    private var lastTimestamp: Int64?
    private var reachedEnd = false
    private var seeks = 0
    /// The goal of the last seek: never seek toward it (or before it) again.
    private var lastSeekGoal: Int64 = .min
    /// How far a packet's presentation time may lie after its decode time (B-frame reordering,
    /// µs): index entries hold decode times, so a keyframe found there at `t - reorder` is shown
    /// at or before `t`.
    private var reorder: Int64

    init(
        asset: Asset,
        track: AssetTrack,
        toleranceBefore: Int64,
        toleranceAfter: Int64,
        start: Int64 = .min,
        end: Int64?
    ) throws(MediaError) {
        self.asset = asset
        streamIndex = track.index
        let stream = asset.input.stream(track.index)
        timeBase = stream.pointee.time_base
        decoder = try asset.makeDecoder(for: track)
        decoding = DecodeLoop(decoder: decoder, trackIndex: track.index)
        self.toleranceBefore = max(0, toleranceBefore)
        self.toleranceAfter = max(0, toleranceAfter)
        self.end = end
        self.start = start
        let rate = stream.pointee.avg_frame_rate.isValid ? stream.pointee.avg_frame_rate : stream.pointee.r_frame_rate
        defaultDuration = rate.isValid ? max(1, av_rescale_q(1, av_inv_q(rate), microsecondBase)) : 40_000
        reorder = Int64(stream.pointee.codecpar.pointee.video_delay + 1) * defaultDuration
        for index in 0..<asset.input.streamCount {
            asset.input.stream(index).pointee.discard = index == track.index ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
    }

    /// How many seeks the pass made (for tests and benchmarks: one forward pass, no seek back).
    var seekCount: Int { seeks }

    /// Finds a frame for every target (sorted by time) and hands each to `deliver` with the
    /// frame's time (µs, absolute). Times past the end get the last frame. Throws when reading
    /// fails or `isCancelled` turns true; the targets not yet delivered are then the caller's.
    func locate(
        _ targets: [Target],
        isCancelled: () -> Bool,
        deliver: (Target, Frame, Int64) throws(MediaError) -> Void
    ) throws(MediaError) {
        precondition(zip(targets, targets.dropFirst()).allSatisfy { $0.time <= $1.time }, "targets are sorted")
        var next = 0
        let scratch = Packet()
        func interrupted() -> MediaError { MediaError.cancelled() }

        while next < targets.count && !reachedEnd {
            if isCancelled() { throw MediaError.cancelled() }
            let target = targets[next].time
            if shouldSeek(toward: target) {
                try seek(toward: target, interrupted: interrupted)
            }
            let result = asset.input.read(into: scratch.pointer)
            if result == AVErr.again { continue }
            if result < 0 {
                if let refusal = asset.input.refusal { throw refusal }
                if result == AVErr.exit || isCancelled() { throw MediaError.cancelled() }
                // The end of the input (or a damaged tail): drain the decoder.
                try decoding.send(nil) { frame throws(MediaError) in
                    try handle(frame, targets, &next, deliver)
                }
                break
            }
            defer { av_packet_unref(scratch.pointer) }
            guard scratch.streamIndex == streamIndex else { continue }
            if scratch.isEncrypted { throw Packet.encryptionError(track: streamIndex, of: asset.displayName) }
            if scratch.pts != noPTS && scratch.dts != noPTS {
                reorder = max(reorder, av_rescale_q(scratch.pts - scratch.dts, timeBase, microsecondBase))
            }
            if waitingForKeyframe {
                guard scratch.isKeyframe else { continue }
                waitingForKeyframe = false
            }
            try decoding.send(scratch.pointer) { frame throws(MediaError) in
                try handle(frame, targets, &next, deliver)
            }
        }
        // Times past the last frame (or the range's end) get the last frame.
        guard next < targets.count else { return }
        guard let held else {
            try decoding.checkAnythingDecoded()
            throw MediaError(.decodeFailed, "track \(streamIndex) has no frame that could be decoded")
        }
        for target in targets[next...] { try deliver(target, held.frame, held.time) }
    }

    /// Takes one decoded frame: delivers it, or the frame before it, for every target it
    /// settles; returns `false` once nothing more is wanted from this packet.
    private func handle(
        _ frame: UnsafeMutablePointer<AVFrame>,
        _ targets: [Target],
        _ next: inout Int,
        _ deliver: (Target, Frame, Int64) throws(MediaError) -> Void
    ) throws(MediaError) -> Bool {
        var timestamp = frame.pointee.best_effort_timestamp
        if timestamp == noPTS {
            timestamp = lastTimestamp.map { $0 + av_rescale_q(defaultDuration, microsecondBase, timeBase) } ?? 0
        }
        lastTimestamp = timestamp
        let time = av_rescale_q(timestamp, timeBase, microsecondBase)
        guard time >= minimumTime else { return true }
        if let end, time >= end {
            reachedEnd = true
            return false
        }
        let current: Frame
        do { current = try Frame.referencing(frame) } catch {
            throw MediaError(.decodeFailed, "track \(streamIndex): keeping a frame failed", detail: "\(error)")
        }
        position = time
        while next < targets.count {
            let target = targets[next]
            // A keyframe between here and the time: seeking gets there (or nearer) for less.
            if shouldSeek(toward: target.time) {
                held = (current, time)
                return false
            }
            let earliest = max(target.time.subtractingClamped(toleranceBefore), start)
            let latest = target.time.addingClamped(toleranceAfter)
            if let held, held.time <= latest, time > earliest {
                try deliver(target, held.frame, held.time)
            } else if time >= earliest && time <= latest {
                try deliver(target, current, time)
            } else if held == nil && time > latest {
                // Nothing earlier exists (the time is before the track's first frame).
                try deliver(target, current, time)
            } else {
                break
            }
            next += 1
        }
        held = (current, time)
        return next < targets.count
    }

    private func shouldSeek(toward target: Int64) -> Bool {
        let goal = seekGoal(for: target)
        let here = position ?? asset.startTime
        guard goal > here, goal > lastSeekGoal else { return false }
        let input = asset.input
        if !input.isHeaderless, avformat_index_get_entries_count(input.stream(streamIndex)) > 0 {
            // A keyframe decoded after `here` and shown at or before the goal.
            let latest = goal.subtractingClamped(reorder)
            guard let keyframe = asset.indexedKeyframe(stream: streamIndex, atOrBefore: latest) else { return false }
            return keyframe > here
        }
        return goal - here > Self.unindexedSeekDistance
    }

    /// Where to seek for `target`: the keyframe at or before the latest acceptable time is the
    /// first frame that can be taken without decoding more.
    private func seekGoal(for target: Int64) -> Int64 {
        guard toleranceAfter < Int64.max / 2 else { return target }
        let latest = target.addingClamped(toleranceAfter)
        guard let end else { return latest }
        return min(latest, end - 1)
    }

    private func seek(toward target: Int64, interrupted: () -> MediaError) throws(MediaError) {
        let goal = seekGoal(for: target)
        lastSeekGoal = goal
        let keyframe = try asset.seek(to: goal, reference: streamIndex, interrupted: interrupted)
        avcodec_flush_buffers(decoder.context)
        seeks += 1
        held = nil
        lastTimestamp = nil
        waitingForKeyframe = true
        minimumTime = keyframe?.microseconds ?? .min
        position = keyframe?.microseconds ?? position
    }
}

extension Int64 {
    func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    func subtractingClamped(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other > 0 ? .min : .max) : difference
    }
}
