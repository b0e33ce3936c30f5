/// The order in which the tracks of one file hand their packets to the muxer, made the same on
/// every run (docs/ffmpeg.md #27, docs/decisions.md #153).
///
/// Each track runs on its own thread, so which of them reaches the muxer first depends on the
/// scheduler; FFmpeg's interleaver writes in that order whenever it stops waiting for a track
/// (one 10 s behind the others: a slide show's video behind the encoder's lookahead), and the
/// file's bytes changed from run to run. Here every packet carries the input's *sequence*: the
/// number of the demuxed packet whose reading released it (the demuxer numbers the packets it
/// hands out; a track idle in the file hears the number through a marker). A packet is passed
/// on in the order (sequence, stream, arrival) once no other track can still bring one before
/// it: the order depends on the input alone, and the muxer sees it so whatever the timing.
///
/// Pure: the muxer's lock guards it (`OutputFile`).
struct InputOrder<Item: Sendable>: Sendable {
    private var waiting: [[(sequence: Int64, item: Item)]]
    /// A stream's packets still to come have at least this sequence.
    private var progress: [Int64]

    init(streams: Int) {
        waiting = Array(repeating: [], count: streams)
        progress = Array(repeating: 0, count: streams)
    }

    /// Takes a packet of `stream`, released by the input's packet `sequence` (taken as no earlier
    /// than its stream's earlier packets and what it promised with `advance`).
    mutating func add(_ item: Item, stream: Int, sequence: Int64) {
        let sequence = max(sequence, progress[stream])
        waiting[stream].append((sequence, item))
        advance(stream, to: sequence)
    }

    /// `stream`'s packets still to come have at least `sequence`.
    mutating func advance(_ stream: Int, to sequence: Int64) {
        progress[stream] = max(progress[stream], sequence)
    }

    /// `stream` will bring nothing more.
    mutating func finish(_ stream: Int) { progress[stream] = .max }

    /// The next packet to pass on, if no stream can still bring one before it.
    mutating func next() -> Item? {
        guard let (stream, sequence) = head() else { return nil }
        for other in progress.indices where other != stream {
            let ahead = progress[other] > sequence || (progress[other] == sequence && other > stream)
            guard ahead else { return nil }
        }
        return waiting[stream].removeFirst().item
    }

    /// Every waiting packet, in order (the end of the file: nothing else will come).
    mutating func drain() -> [Item] {
        for stream in progress.indices { finish(stream) }
        var items: [Item] = []
        while let item = next() { items.append(item) }
        return items
    }

    private func head() -> (stream: Int, sequence: Int64)? {
        var best: (stream: Int, sequence: Int64)?
        for (stream, queue) in waiting.enumerated() {
            guard let first = queue.first else { continue }
            if best == nil || first.sequence < best!.sequence { best = (stream, first.sequence) }
        }
        return best
    }
}
