import CFFmpeg
import Foundation
import JobctlCore
import Streaming
import Synchronization

/// Makes an adaptive-bitrate ladder (HLS and DASH over one set of CMAF files) from an asset:
/// one reader, several writers. The picture is decoded once, scaled once to the largest
/// rendition by the reader, and from that once per smaller rendition; each rendition has its
/// own encoder and segmenting muxer. Audio is decoded and encoded once, as its own rendition.
///
/// Every rendition gets an IDR at the first frame at or after each multiple of 2 s, the same
/// frame in all of them, and a segment is cut at the first of those at or after each multiple
/// of 6 s. Then the playlists and the manifest are written from the files (`LadderPackage`)
/// and the rules checked: a `must` finding fails the ladder (`encode_failed`) before anything
/// is shown.
///
/// Sendable: configuration is immutable; status, progress and what `cancel()` reaches are in
/// `state`.
public final class LadderSession: @unchecked Sendable {
    public let asset: Asset
    public let options: LadderOptions
    public let timeRange: TimeRange
    public let scope: Scope
    let plan: LadderPlan
    private let state = Mutex(State())

    private struct State {
        var cancelled = false
        var reader: AssetReader?
        var muxers: [OutputFile] = []
        var expected: Int64?
        var produced: [Int64] = []
        var progress = 0.0
    }

    public init(
        asset: Asset,
        options: LadderOptions,
        timeRange: TimeRange = .all,
        scope: Scope = .whole
    ) throws(MediaError) {
        self.asset = asset
        self.options = options
        self.timeRange = timeRange
        self.scope = scope
        plan = try LadderPlan(asset: asset, options: options)
        let range = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        if let duration = range.expectedDuration,
            let error = asset.limits.tooLong(duration, what: "the ladder of \(asset.displayName)")
        {
            throw error
        }
    }

    /// The renditions this asset gets, lowest first (empty for audio only).
    public var renditions: [Ladder.Rendition] { plan.renditions }

    /// A rerun into the same directory removes nothing: a ladder's names (`*.m3u8`, `*.m4s`,
    /// `*-init.mp4`) are names a person's own files have too, and the input itself may be
    /// among them. Files of an earlier ladder that the new one does not have stay,
    /// unreferenced; those it has are replaced.
    @Sendable public static func isSetFile(_ name: String) -> Bool { false }

    /// 0…1, never decreasing: the share of the range the slowest rendition has encoded.
    public var progress: Double {
        state.withLock { state in
            guard let expected = state.expected, expected > 0, let slowest = state.produced.min() else {
                return state.progress
            }
            state.progress = max(state.progress, min(0.99, Double(slowest) / Double(expected)))
            return state.progress
        }
    }

    public func cancel() {
        let (reader, muxers) = state.withLock { state in
            state.cancelled = true
            return (state.reader, state.muxers)
        }
        reader?.cancelReading()
        for muxer in muxers { muxer.abort() }
    }

    /// Writes the ladder into `directory`, all or none.
    public func run(directory: String) throws(MediaError) -> LadderResult {
        let files = try StagedFiles(directory: directory)
        var result = try run(into: files)
        result.files = try files.commit()
        return result
    }

    /// Writes the ladder into `files` (staged; the caller commits or discards): the media first,
    /// the media playlists after it, `manifest.mpd` and `master.m3u8` last.
    public func run(into files: StagedFiles) throws(MediaError) -> LadderResult {
        if files.budget == nil { files.budget = OutputBudget(limit: asset.limits.maxOutputBytes) }
        do {
            return try encodeAndPackage(into: files)
        } catch {
            files.removeUnadoptedTemporaries()
            throw state.withLock({ $0.cancelled }) ? MediaError.cancelled() : error
        }
    }

    private func encodeAndPackage(into files: StagedFiles) throws(MediaError) -> LadderResult {
        let range = try timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
        // A join first makes sure every chunk is there (before it spends time on the sound).
        var warnings = asset.warnings
        if case .join(let chunks) = scope {
            for index in try completeChunks(chunks) {
                warnings.append("chunk \(index) was missing from the scratch directory: the join encoded it again")
            }
        }
        let reader = try AssetReader(asset: asset, timeRange: timeRange)
        var videoOutput: AssetReaderTrackOutput?
        var audioOutput: AssetReaderTrackOutput?
        if scope.encodesVideo, let video = plan.video, let top = plan.top {
            let output = AssetReaderTrackOutput(
                track: video,
                settings: .video(size: PictureSize(width: top.width, height: top.height), color: plan.color)
            )
            reader.add(output)
            videoOutput = output
        }
        if scope.encodesAudio, let audio = plan.audio {
            let output = AssetReaderTrackOutput(
                track: audio,
                settings: .audio(sampleRate: plan.audioSampleRate, channels: plan.audioChannels)
            )
            reader.add(output)
            audioOutput = output
        }
        let encoders = try RenditionEncoders(
            plan: plan,
            codec: options.codec,
            files: files,
            video: videoOutput != nil,
            audio: audioOutput != nil,
            chunk: scope.chunk
        )
        let cancelled = state.withLock { state in
            state.reader = reader
            state.muxers = encoders.muxers
            state.expected = range.expectedDuration
            state.produced = Array(repeating: 0, count: (videoOutput == nil ? 0 : 1) + (audioOutput == nil ? 0 : 1))
            return state.cancelled
        }
        if cancelled {
            encoders.abort()
            throw MediaError.cancelled()
        }
        // A join of a silent input reads nothing here: its pictures are the chunks'.
        if videoOutput != nil || audioOutput != nil {
            try read(reader, video: videoOutput, audio: audioOutput, into: encoders)
        }
        if state.withLock({ $0.cancelled }) {
            encoders.abort()
            throw MediaError.cancelled()
        }
        // Nothing decoded: a picture track without pictures, or media without any (a CMAF
        // initialization segment alone). A join of a silent input reads nothing here.
        let nothing = encoders.framesWritten == 0 && (encoders.soundEnd ?? 0) == 0
        guard (encoders.framesWritten > 0 || videoOutput == nil) && !(nothing && audioOutput != nil) else {
            encoders.abort()
            throw MediaError(
                .decodeFailed,
                "no frame of \(asset.displayName) could be decoded: the media is too short or damaged"
            )
        }
        // Every rendition ends at the program's end (decision 155).
        do throws(MediaError) {
            var pictureEnd = try joinedPictureEnd()
            // A join whose sound outlasts the chunks' pictures encodes the last chunk again,
            // its last picture repeated to the sound's end (a chunk knows nothing of the sound).
            if case .join(let chunks) = scope, let last = chunks.last, let picture = pictureEnd,
                let sound = encoders.soundEnd, sound - picture > plan.frameMicroseconds
            {
                try extendChunk(last, to: sound)
                warnings.append(
                    "the picture ends \(RenditionEncoders.seconds(sound - picture)) before the sound: its last picture is shown until the sound ends"
                )
                pictureEnd = try joinedPictureEnd()
            }
            warnings += try encoders.endMedia(pictureEnd: pictureEnd)
        } catch {
            encoders.abort()
            throw error
        }
        var written = try encoders.finish()
        let encoded = written.video + (written.audio.map { [$0] } ?? [])
        if case .join(let chunks) = scope { written.video = try joinChunks(chunks, into: files) }
        let package: LadderPackage.Package
        do {
            package = try LadderPackage.package(video: written.video, audio: written.audio) { name in
                try Self.read(files.pinnedTemporaryPath(of: name))
            }
        } catch {
            throw MediaError(.encodeFailed, "the ladder's segments cannot be read back: \(error)")
        }
        let must = package.findings.filter { $0.level == .must }
        if !must.isEmpty {
            throw MediaError(
                .encodeFailed,
                "the ladder breaks the streaming rules, nothing was published: "
                    + must.map(\.description).joined(separator: "; ")
            )
        }
        // The media first, then the playlists, the entry points last (`PublishRank`): a reader
        // never finds a playlist naming a segment that is not there yet.
        for rendition in encoded {
            for segment in rendition.segments { try files.adopt(segment) }
            try files.adopt(rendition.initialization)
        }
        // A chunk's files are only its media: its join writes the ladder's playlists.
        let entryPoints = ["manifest.mpd", "master.m3u8"]
        for (name, text) in package.files.sorted(by: { $0.key < $1.key }) where scope.chunk == nil {
            let rank: StagedFiles.PublishRank = entryPoints.contains(name) ? .entryPoint : .index
            try files.write(name, Array(text.utf8), rank: rank)
        }
        // The input's file name only: a remote input's host and path are not for a public page.
        let title = (asset.displayName as NSString).lastPathComponent
        if scope.chunk == nil {
            try files.write("player.html", Array(LadderPlayerPage.html(title: title).utf8), rank: .index)
        }
        return LadderResult(plan: plan, written: written, package: package, warnings: warnings)
    }

    /// Reads the asset once, a thread per medium moving its samples through the encoders.
    private func read(
        _ reader: AssetReader,
        video videoOutput: AssetReaderTrackOutput?,
        audio audioOutput: AssetReaderTrackOutput?,
        into encoders: RenditionEncoders
    ) throws(MediaError) {
        do {
            try reader.startReading()
        } catch {
            encoders.abort()
            throw error
        }
        let failure = Mutex<MediaError?>(nil)
        let threads = ThreadGroup()
        let record = { @Sendable (error: MediaError) in
            let first = failure.withLock { recorded -> Bool in
                guard recorded == nil || (recorded!.isCancellation && !error.isCancellation) else { return false }
                recorded = error
                return true
            }
            if first { if error.isCancellation { reader.cancelReading() } else { reader.fail(error) } }
        }
        if let videoOutput {
            threads.spawn("jobctl.ladder.video") { [self] in
                do throws(MediaError) {
                    try encoders.encodeVideo(from: videoOutput) { end in self.produced(end, slot: 0) }
                } catch { record(error) }
            }
        }
        if let audioOutput {
            let slot = videoOutput == nil ? 0 : 1
            threads.spawn("jobctl.ladder.audio") { [self] in
                do throws(MediaError) {
                    try encoders.encodeAudio(from: audioOutput) { end in self.produced(end, slot: slot) }
                } catch { record(error) }
            }
        }
        threads.join()
        reader.waitUntilFinished()
        if state.withLock({ $0.cancelled }) {
            encoders.abort()
            throw MediaError.cancelled()
        }
        if let error = reader.error ?? failure.withLock({ $0 }) {
            encoders.abort()
            throw error
        }
    }

    private func produced(_ end: Int64, slot: Int) {
        state.withLock { if slot < $0.produced.count { $0.produced[slot] = end } }
    }

    static func read(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
