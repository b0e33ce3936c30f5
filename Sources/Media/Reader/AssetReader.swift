import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

/// Reads the samples of an asset's tracks over a time range (`AVAssetReader`).
///
/// `startReading()` seeks, then runs one demuxer thread that routes each packet to its track's
/// bounded queue, and one thread per output that decodes and converts. Status moves
/// `unknown → reading → completed | failed | cancelled`.
///
/// Sendable: the configuration (`asset`, `timeRange`) is fixed at init; everything that changes
/// (status, outputs, the window) is in `state`, behind a mutex; `threads` is thread-safe.
public final class AssetReader: @unchecked Sendable {
    public let asset: Asset
    /// The range to read, relative to the asset's start; intersected with its duration.
    public let timeRange: TimeRange

    private let threads = ThreadGroup()
    private let state = Mutex(State())

    private struct State {
        var status: Status = .unknown
        var outputs: [AssetReaderOutput] = []
        var error: MediaError?
        var window: ReadWindow?
        var inputEndedEarly: String?
        var lastDemuxError: String?
        var marksInputOrder = false
    }

    /// Numbers the packets handed to the outputs and tells an idle output how far the input has
    /// got, so that samples carry the input's order (`InputOrder`: a writer whose tracks must
    /// reach its muxer in the same order on every run). Set before `startReading()`.
    public var marksInputOrder: Bool {
        get { state.withLock { $0.marksInputOrder } }
        set { state.withLock { $0.marksInputOrder = newValue } }
    }

    /// An idle output hears the input's sequence after this many packets went to the others.
    static let markerInterval: Int64 = 8

    /// How much earlier than a range's start decoded audio is read from (200 ms: more than any
    /// common codec's pre-roll: AAC 1024 samples, MP3 two frames, Opus 80 ms).
    static let audioPreroll: Int64 = 200_000

    public init(asset: Asset, timeRange: TimeRange = .all) throws(MediaError) {
        guard asset.claimForReading() else {
            throw MediaError(.internalError, "\(asset.displayName) is already being read by another reader")
        }
        self.asset = asset
        self.timeRange = timeRange
    }

    /// The outputs added so far, in order.
    public var outputs: [AssetReaderOutput] { state.withLock { $0.outputs } }

    public var status: Status { state.withLock { $0.status } }
    public var error: MediaError? { state.withLock { $0.error } }

    /// The error that ended the reading (failure or cancellation), if it did not complete.
    var terminalError: MediaError? { state.withLock { $0.error } }

    /// The time range actually delivered, relative to the asset's start, once reading started:
    /// for copied video it begins at the keyframe at or before the requested start.
    public var actualStart: Int64? { state.withLock { $0.window.map { $0.start - asset.startTime } } }

    /// Microseconds relative to the asset's start.
    var window: ReadWindow? { state.withLock { $0.window } }

    /// A read error that ended the input before the range did (a truncated file), if any.
    var inputEndedEarly: String? { state.withLock { $0.inputEndedEarly } }

    /// The last error the demuxer logged before the input ended, if any (`partial file`).
    var lastDemuxError: String? { state.withLock { $0.inputEndedEarly ?? $0.lastDemuxError } }

    /// Once finished: the input ended with a plain end of file, nothing was logged as an error
    /// on the way there, no decoder failed on a packet, and the container's index names nothing
    /// past the end of the file. What was read is then all the media the file holds, whatever
    /// its headers claim.
    var endedCleanly: Bool {
        let logged = state.withLock { $0.inputEndedEarly ?? $0.lastDemuxError }
        return logged == nil && asset.decodeDamage.count == 0
            && !asset.input.indexReachesPastEnd(streams: outputs.flatMap(\.tracks).map(\.index))
    }

    public func add(_ output: AssetReaderOutput) {
        precondition(
            output.tracks.allSatisfy { track in asset.tracks.contains { $0.index == track.index } },
            "the output's tracks belong to another asset"
        )
        state.withLock { state in
            precondition(state.status == .unknown, "outputs are added before reading starts")
            let used = Set(state.outputs.flatMap(\.tracks).map(\.index))
            precondition(output.tracks.allSatisfy { !used.contains($0.index) }, "a track is read by one output")
            state.outputs.append(output)
        }
        output.reader = self
    }

    /// Resolves the range, seeks, creates the decoders and starts the threads. Throws the
    /// cancellation when `cancelReading()` came first (a job cancelled while it was being set up).
    public func startReading() throws(MediaError) {
        let outputs = self.outputs
        if status == .cancelled { throw terminalError ?? MediaError.cancelled() }
        precondition(status == .unknown && !outputs.isEmpty)
        let range = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        var window = ReadWindow(start: asset.startTime + range.start, end: range.end.map { asset.startTime + $0 })
        let input = asset.input

        for index in 0..<input.streamCount {
            let used = outputs.contains { $0.tracks.contains { $0.index == index } }
            input.stream(index).pointee.discard = used ? AVDISCARD_DEFAULT : AVDISCARD_ALL
        }
        let copiedVideo = outputs.first(where: \.copiesVideo)?.tracks[0]
        let reference =
            copiedVideo ?? outputs.lazy.flatMap(\.tracks).first { $0.mediaType == .video } ?? outputs[0].tracks[0]
        // A range from 0 needs no seek: the demuxer is at the first packet.
        if range.start > 0 {
            // Decoded audio needs the packets just before the start to warm its decoder up (AAC's
            // overlapping transform, MP3's bit reservoir, Opus's pre-roll): seeking
            // `audioPreroll` earlier gives them, and the samples before the start are dropped
            // anyway. Not when video is copied: that starts at the keyframe at or before START.
            let decodesAudio = outputs.contains(where: \.decodesAudio)
            let preroll = copiedVideo == nil && decodesAudio ? Self.audioPreroll : 0
            let target = max(asset.startTime, window.start - preroll)
            let keyframe = try asset.seek(to: target, reference: reference.index) { [self] in
                terminalError ?? MediaError.cancelled()
            }
            if copiedVideo != nil, let keyframe {
                window.keyframe = keyframe
                window.start = keyframe.microseconds
            }
        }

        // Decoders are created here, before the threads, so a bad stream fails the start.
        let context = PipelineContext(input: input, window: window) { [asset] track throws(MediaError) in
            try asset.makeDecoder(for: track)
        }
        var pipelines: [TrackPipeline] = []
        for output in outputs { pipelines.append(try output.makePipeline(context)) }

        state.withLock {
            $0.status = .reading
            $0.window = window
        }
        let routes = Routes(
            input: input,
            outputs: outputs,
            end: window.end,
            origin: window.start,
            marksInputOrder: marksInputOrder
        )
        for (output, pipeline) in zip(outputs, pipelines) {
            output.setStatus(.reading)
            let box = UncheckedBox(pipeline)
            let name = "\(output.tracks[0].mediaType).\(output.tracks.map { "\($0.index)" }.joined(separator: "+"))"
            threads.spawn("jobctl.read.\(name)") { [self] in
                output.run(box.value, reader: self)
            }
        }
        threads.spawn("jobctl.demux") { [self] in demux(routes) }
    }

    /// Stops reading: wakes every thread, aborts blocking I/O. Safe from any thread.
    public func cancelReading() {
        let changed = state.withLock { state -> Bool in
            guard !state.status.isTerminal else { return false }
            state.status = .cancelled
            state.error = state.error ?? MediaError.cancelled()
            return true
        }
        if changed { stopEverything() }
    }

    /// Records the first failure and stops everything.
    func fail(_ error: MediaError) {
        let changed = state.withLock { state -> Bool in
            guard !state.status.isTerminal else { return false }
            state.status = .failed
            state.error = error
            return true
        }
        if changed { stopEverything() }
    }

    /// Waits for every reading thread to end; then marks the reader completed if nothing failed.
    public func waitUntilFinished() {
        threads.join()
        state.withLock { if $0.status == .reading { $0.status = .completed } }
    }

    private func stopEverything() {
        asset.interrupt.set()
        let outputs = self.outputs
        for output in outputs {
            output.packets.cancel()
            output.samples.cancel()
        }
    }

    // MARK: Demuxing

    /// Which output each stream's packets go to, where each stream's range ends, and how to
    /// place its packets on the export's timeline.
    struct Routes: Sendable {
        var byStream: [Int: (output: AssetReaderOutput, end: Int64?, timeBase: AVRational)] = [:]
        /// The window's start (absolute µs): time 0 of the timeline.
        let origin: Int64
        let outputs: [AssetReaderOutput]
        let marksInputOrder: Bool

        init(input: InputFile, outputs: [AssetReaderOutput], end: Int64?, origin: Int64, marksInputOrder: Bool) {
            self.origin = origin
            self.outputs = outputs
            self.marksInputOrder = marksInputOrder
            for output in outputs {
                for track in output.tracks {
                    let timeBase = input.stream(track.index).pointee.time_base
                    byStream[track.index] = (
                        output, end.map { av_rescale_q_rnd($0, microsecondBase, timeBase, AV_ROUND_UP) }, timeBase
                    )
                }
            }
        }

        /// Where `packet` starts and ends on the timeline (µs from the window's start); `nil`
        /// without a timestamp.
        func span(of packet: Packet) -> (start: Int64, end: Int64)? {
            guard let route = byStream[packet.streamIndex] else { return nil }
            let timestamp = packet.pts != noPTS ? packet.pts : packet.dts
            guard timestamp != noPTS else { return nil }
            return TimelineGuard<Packet>.span(
                start: av_rescale_q(timestamp, route.timeBase, microsecondBase),
                duration: packet.duration > 0 ? av_rescale_q(packet.duration, route.timeBase, microsecondBase) : 0,
                origin: origin
            )
        }
    }

    /// Reads packets until every track's range has ended or the input has; on its own thread.
    /// Every packet passes the timeline guard first: filler stays bounded by where the media is.
    private func demux(_ routes: Routes) {
        let input = asset.input
        let scratch = Packet()
        var open = Set(routes.byStream.keys)
        var rules = TimelineGuard<Packet>.Rules(maxDuration: asset.limits.maxDuration)
        if let duration = asset.duration, !asset.durationIsEstimate {
            rules.declaredEnd = asset.startTime + duration - routes.origin
        }
        var timeline = TimelineGuard<Packet>(streams: routes.byStream.keys, rules: rules)
        var order = DemuxOrder(routes)
        defer {
            for output in routes.outputs {
                order.end(output)
                output.packets.close()
            }
        }
        reading: while !open.isEmpty && terminalError == nil {
            let result = input.read(into: scratch.pointer)
            if result == AVErr.again { continue }
            if result < 0 {
                if let refusal = input.refusal {
                    fail(refusal)
                    return
                }
                // A damaged file often ends with a logged error ("partial file") and a plain EOF.
                let logged = FFmpegLog.takeLastError()
                if result != AVErr.eof && result != AVErr.exit {
                    state.withLock { $0.inputEndedEarly = logged ?? FFError.message(for: result) }
                } else if let logged {
                    state.withLock { $0.lastDemuxError = logged }
                }
                break reading
            }
            order.read()
            let index = scratch.streamIndex
            guard open.contains(index), let route = routes.byStream[index] else {
                av_packet_unref(scratch.pointer)
                continue
            }
            if scratch.isEncrypted {
                av_packet_unref(scratch.pointer)
                fail(Packet.encryptionError(track: index, of: asset.displayName))
                return
            }
            if let end = route.end, scratch.decodeTimestamp != noPTS, scratch.decodeTimestamp >= end {
                // Packets come in decode order: nothing after this one is shown before the end.
                av_packet_unref(scratch.pointer)
                open.remove(index)
                // A parked track's queue stays open: the others may still release it. An output
                // of several tracks (a mix) is closed when the last of them ends.
                let finished = route.output.tracks.allSatisfy {
                    !open.contains($0.index) && !timeline.isParked($0.index)
                }
                if finished {
                    order.end(route.output)
                    route.output.packets.close()
                }
                continue
            }
            let packet = Packet.moving(from: scratch.pointer)
            order.number(packet)
            var routed = [(stream: index, item: packet)]
            if let span = routes.span(of: packet) {
                // (Only packets without any timestamp pass unplaced.)
                do {
                    routed = try timeline.admit(
                        packet,
                        stream: index,
                        start: span.start,
                        end: span.end,
                        bytes: Int(packet.pointer.pointee.size)
                    )
                } catch {
                    fail(error)
                    return
                }
            }
            for (stream, item) in routed {
                let output = routes.byStream[stream]!.output
                order.heard(output)
                if !output.packets.push(item) {
                    for track in output.tracks { open.remove(track.index) }  // the output needs no more
                }
            }
            order.markIdle { timeline.isParked($0) }
        }
        guard terminalError == nil else { return }
        // A playlist reader that went on without a segment, with media after it.
        if let refusal = input.refusal {
            fail(refusal)
            return
        }
        do {
            try timeline.finish()
        } catch {
            fail(error)
        }
    }
}

/// The demuxer's numbering of the packets it hands out (`InputOrder`), and the markers that
/// tell an output idle in the file how far the input has got. Only when the reader
/// `marksInputOrder`.
private struct DemuxOrder {
    let outputs: [AssetReaderOutput]
    let enabled: Bool
    /// Packets read from the input so far, those of no output too: a count that depends on the
    /// file alone (what reaches an output can depend on when its range ended).
    private var handedOut: Int64 = 0
    /// Where each output last heard from the demuxer (a packet or a marker), by position in
    /// `outputs`.
    private var lastHeard: [Int64]

    init(_ routes: AssetReader.Routes) {
        outputs = routes.outputs
        enabled = routes.marksInputOrder
        lastHeard = Array(repeating: 0, count: outputs.count)
    }

    mutating func read() { handedOut += 1 }

    /// A packet just read: its number (a packet the timeline guard holds back keeps it).
    func number(_ packet: Packet) { packet.sequence = handedOut }

    mutating func heard(_ output: AssetReaderOutput) {
        if let index = outputs.firstIndex(where: { $0 === output }) { lastHeard[index] = handedOut }
    }

    /// An output that heard nothing for a while, and has nothing queued (so the push cannot
    /// wait), hears that its packets still to come are later than every one handed out. Not
    /// one with a track the timeline guard holds back: those packets come later, with earlier
    /// numbers.
    mutating func markIdle(isParked: (Int) -> Bool) {
        guard enabled else { return }
        for (index, output) in outputs.enumerated()
        where handedOut - lastHeard[index] >= AssetReader.markerInterval && output.packets.isEmpty
            && !output.tracks.contains(where: { isParked($0.index) })
        {
            output.packets.push(.marker(handedOut + 1))
            lastHeard[index] = handedOut
        }
    }

    /// Before an output's queue closes: its last samples (the decoder's and encoder's delay)
    /// carry the input's position there.
    mutating func end(_ output: AssetReaderOutput) {
        guard enabled else { return }
        output.packets.push(.marker(handedOut + 1))
    }
}

/// Carries a non-Sendable value into a thread that becomes its only user.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
