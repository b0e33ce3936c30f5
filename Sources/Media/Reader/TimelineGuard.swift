/// Keeps an export's timeline where the input's media really is (docs/spec.md §7), deciding for each
/// demuxed packet whether it is routed, held back, or dropped. Pure logic: no FFmpeg, no
/// threads, so every rule is tested on its own.
///
/// Tracks start together at 0, so a track that starts late is preceded by filler (silence, the
/// first picture held). Filler costs nothing to read and can cost hours to write: a 10 KB file
/// whose audio claims to start at 10,000,000 s would be encoded as 115 days of silence. So:
///
/// - **A late track waits for the others.** Demuxers deliver packets in (roughly) time order,
///   so when a carried track's first packet is more than `slack` past where the other carried
///   tracks' media has got to, it is parked until they catch up. If they never do (they end
///   first, or the parking fills up), the track starts after the others' media ends: the
///   export fails with `decode_failed` instead of filling the gap. Before any track has
///   started, a track may start at most `maxJump` after the window's start.
/// - **A jump past all media is damage.** A packet more than `maxJump` past the furthest media
///   of every carried track, or past the container's declared duration by more than
///   `contiguity` beyond that media, carries a corrupted timestamp: it is dropped, and
///   `jumpBudget` such packets in a row fail the export with `decode_failed`. (A deliberate
///   discontinuity, as in some broadcast captures, is refused, not re-timed.)
/// - **The timeline has a ceiling.** Media past `maxDuration` from the start fails the export
///   with `limit_exceeded`.
///
/// Times are microseconds from the start of the export's window.
struct TimelineGuard<Item> {
    struct Rules: Sendable {
        /// How far a late track's first packet may lead the other tracks' media (demuxer
        /// interleaving is never perfect).
        var slack: Int64 = 10_000_000
        /// How far past every track's media a packet may jump (a slide show's long frame)
        /// when the container does not say how long it is.
        var maxJump: Int64 = 300_000_000
        /// Where the container says its media ends (`nil`: it does not, or only guesses from
        /// the bitrate). Past it, media must be contiguous.
        var declaredEnd: Int64?
        /// The largest gap past the declared end (real files read past an estimated end
        /// without holes).
        var contiguity: Int64 = 1_000_000
        /// Packets in a row a track may lose to jumps before the export fails.
        var jumpBudget = 100
        /// The ceiling of the timeline (`--max-duration`); `nil`: none.
        var maxDuration: Int64?
        /// How much of the late tracks, all together, may wait for the others.
        var parkingPackets = 4096
        var parkingBytes = 64 << 20
    }

    let rules: Rules
    /// Per stream: where its routed media ends (≥ 0), and how many packets in a row jumped.
    private var frontier: [Int: Int64]
    private var started: Set<Int> = []
    private var jumps: [Int: (count: Int, first: Int64)] = [:]
    private var parked: [Int: (first: Int64, items: [Item], end: Int64, bytes: Int)] = [:]
    private var parkedPackets = 0
    private var parkedBytes = 0

    /// - Parameter streams: the carried streams whose packets pass through the guard.
    init(streams: some Sequence<Int>, rules: Rules = Rules()) {
        self.rules = rules
        frontier = Dictionary(uniqueKeysWithValues: streams.map { ($0, 0) })
    }

    /// Admits a packet of `stream` spanning [`start`, `end`). Returns what to route now, in
    /// order: the packet, and any parked packets it released; nothing when it was held back
    /// or dropped.
    mutating func admit(
        _ item: Item,
        stream: Int,
        start: Int64,
        end: Int64,
        bytes: Int
    ) throws(MediaError) -> [(stream: Int, item: Item)] {
        guard frontier[stream] != nil else { return [(stream, item)] }
        if var waiting = parked[stream] {
            waiting.items.append(item)
            waiting.end = max(waiting.end, end)
            waiting.bytes += bytes
            parked[stream] = waiting
            try park(bytes, for: stream, at: waiting.first)
            return []
        }
        if !started.contains(stream) {
            if start > startLimit(stream) {
                parked[stream] = (start, [item], end, bytes)
                try park(bytes, for: stream, at: start)
                return []
            }
            started.insert(stream)
        } else if start > jumpLimit {
            let run = jumps[stream].map { ($0.count + 1, $0.first) } ?? (1, start)
            jumps[stream] = run
            if run.0 >= rules.jumpBudget {
                throw MediaError(
                    .decodeFailed,
                    "track \(stream): timestamps jump from \(TimeRange.format(globalFrontier)) to \(TimeRange.format(run.1)) for \(rules.jumpBudget) packets in a row: the file is damaged (timestamp discontinuities are not re-timed)"
                )
            }
            return []
        }
        jumps[stream] = nil
        try advance(stream, to: end)
        return [(stream, item)] + (try release())
    }

    /// A packet's place on the timeline from its rescaled start and duration (µs, absolute).
    /// `av_rescale_q` answers `INT64_MIN` when the result does not fit, and a hostile file's
    /// timestamps can be anything: nothing here may overflow (a trap would end the worker, not
    /// the job), and a timestamp too large to place counts as infinitely far.
    static func span(start: Int64, duration: Int64, origin: Int64) -> (start: Int64, end: Int64) {
        // Too far to count: as far away as it gets (a jump, or a late start, for the rules).
        guard start != Int64.min else { return (Int64.max, Int64.max) }
        let (relative, overflow) = start.subtractingReportingOverflow(origin)
        let placed = overflow ? (origin > 0 ? Int64.min : Int64.max) : relative
        return (placed, placed.saturatingAdd(duration == Int64.min ? 0 : max(0, duration)))
    }

    /// The input ended: a track still parked starts after every other track's media.
    func finish() throws(MediaError) {
        if let (stream, waiting) = parked.min(by: { $0.key < $1.key }) { throw lateStart(stream, at: waiting.first) }
    }

    /// Whether `stream` is held back (then its end of range must not close its queue yet).
    func isParked(_ stream: Int) -> Bool { parked[stream] != nil }

    // MARK: -

    /// The furthest media of the other carried tracks that have started; `nil` when none has
    /// (then there is no media yet to measure a late start against).
    private func othersFrontier(_ stream: Int) -> Int64? {
        let others = started.filter { $0 != stream }
        guard !others.isEmpty else { return nil }
        return others.map { frontier[$0]! }.max()
    }

    /// How late `stream` may start: `slack` past the media of the tracks that started, or,
    /// before any has, `maxJump` past the window's start (so tracks that are all late together
    /// are refused as one late track would be).
    private func startLimit(_ stream: Int) -> Int64 {
        othersFrontier(stream).map { $0.saturatingAdd(rules.slack) } ?? rules.maxJump
    }

    /// Counts a parked packet against the export's one parking budget (all tracks together).
    private mutating func park(_ bytes: Int, for stream: Int, at start: Int64) throws(MediaError) {
        parkedPackets += 1
        parkedBytes += bytes
        if parkedPackets > rules.parkingPackets || parkedBytes > rules.parkingBytes {
            throw lateStart(stream, at: start)
        }
    }

    private var globalFrontier: Int64 { frontier.values.max() ?? 0 }

    /// Where a started track's next packet may begin: up to `maxJump` past every track's
    /// media, and past the declared duration (if any) only contiguously.
    private var jumpLimit: Int64 {
        let gap = globalFrontier.saturatingAdd(rules.maxJump)
        guard let declaredEnd = rules.declaredEnd else { return gap }
        return min(gap, max(globalFrontier, declaredEnd).saturatingAdd(rules.contiguity))
    }

    private mutating func advance(_ stream: Int, to end: Int64) throws(MediaError) {
        if let limit = rules.maxDuration, end > limit {
            throw MediaError(
                .limitExceeded,
                "the media runs past \(TimeRange.format(limit)), the limit on duration (--max-duration, JOBCTL_MAX_DURATION)"
            )
        }
        frontier[stream] = max(frontier[stream]!, end)
    }

    /// Parked tracks the others have caught up with, their packets in order.
    private mutating func release() throws(MediaError) -> [(stream: Int, item: Item)] {
        var released: [(stream: Int, item: Item)] = []
        var changed = true
        while changed {
            changed = false
            for (stream, waiting) in parked.sorted(by: { $0.key < $1.key }) {
                guard othersFrontier(stream) != nil, waiting.first <= startLimit(stream) else { continue }
                parked[stream] = nil
                parkedPackets -= waiting.items.count
                parkedBytes -= waiting.bytes
                started.insert(stream)
                for item in waiting.items { released.append((stream, item)) }
                // Its own media now counts for the others.
                try advance(stream, to: waiting.end)
                changed = true
            }
        }
        return released
    }

    private func lateStart(_ stream: Int, at start: Int64) -> MediaError {
        guard othersFrontier(stream) != nil else {
            return MediaError(
                .decodeFailed,
                "track \(stream) starts at \(TimeRange.format(start)), more than \(TimeRange.format(rules.maxJump)) after the start of the file: its timestamps are damaged"
            )
        }
        let others = othersFrontier(stream) ?? 0
        return MediaError(
            .decodeFailed,
            "track \(stream) starts at \(TimeRange.format(start)), after the other tracks' media ends (\(TimeRange.format(others))): its timestamps are damaged"
        )
    }
}

extension Int64 {
    /// `self + other`, stopping at the ends instead of trapping.
    func saturatingAdd(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}
