/// Moving a CMAF media segment along the timeline without re-encoding it: what joins the
/// segments that workers encoded for separate spans of one ladder (each starts its decode times
/// at 0) into one timeline.
extension FragmentedMP4 {
    /// `segment` with every decode time moved by `ticks` of `timescale` (the track's): each
    /// `tfdt`'s base media decode time, and each `sidx`'s earliest presentation time (in its
    /// own timescale). The bytes keep their sizes and offsets; a 32-bit field that the move would
    /// overflow or take below 0 is a problem.
    public static func rebased(_ segment: [UInt8], by ticks: Int64, timescale: UInt32) throws(Problem) -> [UInt8] {
        guard timescale > 0 else { throw Problem("a timescale of 0") }
        var bytes = segment
        for box in try boxes(segment, 0..<segment.count) {
            switch box.type {
            case "moof":
                for traf in try boxes(segment, box.body) where traf.type == "traf" {
                    for tfdt in try boxes(segment, traf.body) where tfdt.type == "tfdt" {
                        try shift(
                            &bytes,
                            at: tfdt.body.lowerBound + 4,
                            wide: segment[tfdt.body.lowerBound] >= 1,
                            by: ticks
                        )
                    }
                }
            case "sidx":
                guard box.body.count >= 20 else { throw Problem("a sidx box too short to read") }
                let own = u32(segment, box.body.lowerBound + 8)
                guard own > 0 else { throw Problem("a sidx with a timescale of 0") }
                // ticks × own / timescale, exact when the timescales are equal.
                let moved = ticks.multipliedReportingOverflow(by: Int64(own))
                guard !moved.overflow else { throw Problem("a move of \(ticks) ticks overflows") }
                try shift(
                    &bytes,
                    at: box.body.lowerBound + 12,
                    wide: segment[box.body.lowerBound] >= 1,
                    by: moved.partialValue / Int64(timescale)
                )
            default:
                continue
            }
        }
        return bytes
    }

    /// Adds `ticks` to the big-endian unsigned field at `at` (64 bits if `wide`, else 32).
    static func shift(_ bytes: inout [UInt8], at: Int, wide: Bool, by ticks: Int64) throws(Problem) {
        let width = wide ? 8 : 4
        guard at + width <= bytes.count else { throw Problem("a time field past the end of its box") }
        let old = wide ? u64(bytes, at) : UInt64(u32(bytes, at))
        let sum = Int64(bitPattern: old).addingReportingOverflow(ticks)
        guard !sum.overflow, sum.partialValue >= 0, wide || sum.partialValue <= Int64(UInt32.max) else {
            throw Problem("moving a time of \(old) by \(ticks) ticks leaves its \(width * 8)-bit field")
        }
        let value = UInt64(sum.partialValue)
        for index in 0..<width {
            bytes[at + index] = UInt8(truncatingIfNeeded: value >> UInt64(8 * (width - 1 - index)))
        }
    }
}
