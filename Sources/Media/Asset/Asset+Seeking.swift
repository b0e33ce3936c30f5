import CFFmpeg

/// A keyframe of one stream: where decoding can start cleanly.
struct Keyframe: Sendable {
    var streamIndex: Int
    /// In the stream's time base.
    var pts: Int64
    var timeBase: AVRational

    var microseconds: Int64 { av_rescale_q(pts, timeBase, microsecondBase) }
}

extension Asset {
    /// Seeks so that the next packets start at or before `target` (µs, absolute) with a keyframe
    /// of stream `reference` at or before it, and returns that keyframe (or, when the stream's
    /// first keyframe is already past `target`, that first one). Index-less formats (MPEG-TS) can
    /// land past the keyframe: then it backs off 1 s, 2 s, 4 s… down to the beginning
    /// (docs/ffmpeg.md #25).
    ///
    /// Used by the reader (a range's start) and the image generator (each far-ahead time).
    /// `interrupted` gives the error to throw once the asset's interrupt flag is set.
    func seek(
        to target: Int64,
        reference: Int,
        interrupted: () -> MediaError
    ) throws(MediaError) -> Keyframe? {
        let timeBase = input.stream(reference).pointee.time_base
        var backoff: Int64 = 0
        while true {
            let position = target - backoff
            let atBeginning = position <= startTime
            do {
                try seek(toPosition: position, atBeginning: atBeginning)
            } catch {
                if atBeginning {
                    throw MediaError(
                        .inputUnreadable,
                        "\(displayName) cannot be read from its start",
                        detail: "\(error)"
                    )
                }
                backoff = backoff == 0 ? 1_000_000 : backoff * 2
                continue
            }
            let keyframe = try scanKeyframe(stream: reference, timeBase: timeBase, target: target, interrupted)
            if keyframe.found != nil || atBeginning {
                // Rewind to the same place for the real pass.
                do {
                    try seek(toPosition: position, atBeginning: atBeginning)
                } catch {
                    throw MediaError(.inputUnreadable, "\(displayName): seeking failed", detail: "\(error)")
                }
                return (keyframe.found ?? keyframe.first).map {
                    Keyframe(streamIndex: reference, pts: $0, timeBase: timeBase)
                }
            }
            backoff = backoff == 0 ? 1_000_000 : backoff * 2
        }
    }

    private func seek(toPosition position: Int64, atBeginning: Bool) throws {
        if atBeginning {
            try input.seekToBeginning(startTime: startTime)
        } else {
            try input.seek(toMicroseconds: position)
        }
    }

    /// Reads ahead from the current position: the last keyframe of `stream` at or before
    /// `target` (if the first keyframe is not already past it), and the first keyframe seen.
    private func scanKeyframe(
        stream: Int,
        timeBase: AVRational,
        target: Int64,
        _ interrupted: () -> MediaError
    ) throws(MediaError) -> (found: Int64?, first: Int64?) {
        let scratch = Packet()
        var found: Int64?
        var first: Int64?
        var packets = 0
        while packets < 20_000 {
            if interrupt.isSet { throw interrupted() }
            let result = input.read(into: scratch.pointer)
            if result == AVErr.again { continue }
            guard result >= 0 else { break }
            defer { av_packet_unref(scratch.pointer) }
            packets += 1
            guard scratch.streamIndex == stream else { continue }
            let pts = scratch.pts != noPTS ? scratch.pts : scratch.dts
            guard pts != noPTS else { continue }
            if av_compare_ts(pts, timeBase, target, microsecondBase) > 0 {
                if first == nil && scratch.isKeyframe { first = pts }
                break  // past the target: found (if any) is the answer
            }
            if scratch.isKeyframe {
                first = first ?? pts
                found = pts
            }
        }
        return (found, first)
    }

    /// The timestamp (µs, absolute) of the last indexed keyframe of `stream` at or before
    /// `target`, when the container has an index (MP4, Matroska); `nil` otherwise. Index
    /// entries may hold decode timestamps: a lower bound of the keyframe's presentation time.
    func indexedKeyframe(stream index: Int, atOrBefore target: Int64) -> Int64? {
        let stream = input.stream(index)
        let timeBase = stream.pointee.time_base
        let timestamp = av_rescale_q(target, microsecondBase, timeBase)
        let position = av_index_search_timestamp(stream, timestamp, AVSEEK_FLAG_BACKWARD)
        guard position >= 0, let entry = avformat_index_get_entry(stream, position) else { return nil }
        return av_rescale_q(entry.pointee.timestamp, timeBase, microsecondBase)
    }
}
