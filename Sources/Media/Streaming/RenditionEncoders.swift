import CFFmpeg
import Foundation
import JobctlCore
import Streaming

/// The writers of a ladder: per video rendition a scaler, an encoder and FFmpeg's segmenting
/// muxer (`hls`, CMAF segments), and one for the audio. The muxers write their files straight
/// into the staged set's directory under hidden temporary names (through the pinned directory,
/// `StagedFiles.pinnedTemporaryPath(of:)`); their own playlists are thrown away.
///
/// Used by one thread per medium: the video thread owns `rungs`, the audio thread `audio`.
final class RenditionEncoders: @unchecked Sendable {
    final class Rung {
        let rendition: Ladder.Rendition
        let file: OutputFile
        let engine: VideoEngine
        let scaler: Scaler
        /// Keeps every other frame between keyframes (a ≤ 30 fps rung of a faster source).
        let halves: Bool
        var sinceKeyframe = 0
        /// The last kept frame, sent once the next one says how long it lasts.
        var held: (frame: Frame, pts: Int64, keyframe: Bool)?

        init(rendition: Ladder.Rendition, file: OutputFile, engine: VideoEngine) {
            self.rendition = rendition
            self.file = file
            self.engine = engine
            scaler = Scaler(width: Int32(rendition.width), height: Int32(rendition.height), format: AV_PIX_FMT_YUV420P)
            halves = rendition.frameRate != nil
        }
    }

    let files: StagedFiles
    let plan: LadderPlan
    private(set) var rungs: [Rung] = []
    private var audioFile: OutputFile?
    private var audioEngine: AudioEngine?
    private(set) var framesWritten = 0
    private var timeBase = AVRational(num: 1, den: 1_000_000)
    /// The video thread's, then `finish`'s: where the next IDR is due (µs on the whole ladder's
    /// grid), the last picture read and how long it lasts, and where the pictures end (`timeBase`).
    private var nextKeyframe: Int64 = 0
    private var last: (frame: Frame, duration: Int64)?
    private var videoEnd: Int64?

    /// Every muxer, video first: fixed once the encoders are made (read for every sample).
    private(set) var muxers: [OutputFile] = []

    /// The bytes encoded so far, every rendition together.
    var encodedBytes: Int64 { muxers.reduce(0) { $0 + $1.packetBytes.load(ordering: .relaxed) } }

    /// Stops the ladder as soon as it would pass `--max-output-size`, or the disk is full: the
    /// muxer writes its segments itself and does not say when a write fails (`finish()` checks
    /// what the files hold against what was encoded).
    func checkOutput(_ count: inout Int) throws(MediaError) {
        count += 1
        if let limit = files.budget?.limit, case let bytes = encodedBytes, bytes > limit {
            throw MediaError(
                .limitExceeded,
                "the ladder would be larger than \(limit) bytes, the limit on output size (--max-output-size, JOBCTL_MAX_OUTPUT_SIZE): \(bytes) bytes encoded so far"
            )
        }
        guard count % 50 == 0 else { return }
        var info = statvfs()
        if statvfs(files.pinnedDirectory, &info) == 0,
            UInt64(info.f_bavail) * UInt64(info.f_frsize) < 1 << 20
        {
            throw Self.diskFull(files.directory)
        }
    }

    static func diskFull(_ directory: String) -> MediaError {
        MediaError(.outputUnwritable, "cannot write the ladder into \(directory): no space left on the device")
    }

    /// A chunk's: keyframes on the whole ladder's grid, segments numbered from its first.
    let chunk: LadderChunk?

    init(
        plan: LadderPlan,
        codec: Ladder.Codec,
        files: StagedFiles,
        video encodesVideo: Bool = true,
        audio encodesAudio: Bool = true,
        chunk: LadderChunk? = nil
    ) throws(MediaError) {
        self.files = files
        self.plan = plan
        self.chunk = chunk
        do throws(MediaError) {
            if encodesVideo, let video = plan.video {
                for rendition in plan.renditions {
                    var encoding = AssetWriterInput.VideoEncoding(
                        codec: codec == .hevc ? .hevc : .h264,
                        size: PictureSize(width: rendition.width, height: rendition.height),
                        bitrate: rendition.bitRate,
                        source: video
                    )
                    encoding.alignedKeyframes = true
                    encoding.color = plan.color
                    if rendition.frameRate != nil, let rate = video.frameRateRational {
                        encoding.frameRate = Rational(num: rate.num, den: rate.den * 2)
                    }
                    // Its reorder delay, one of its frames, is two of the source's: the same time
                    // as the full-rate renditions' two frames.
                    encoding.shallowReorder = rendition.frameRate != nil
                    let file = try Self.muxer(rendition.name, files: files)
                    rungs.append(
                        Rung(rendition: rendition, file: file, engine: try VideoEngine(encoding: encoding, file: file))
                    )
                }
            }
            if encodesAudio, let audio = plan.audio {
                let file = try Self.muxer("audio", files: files)
                audioFile = file
                audioEngine = try AudioEngine(
                    encoding: AssetWriterInput.AudioEncoding(
                        sampleRate: plan.audioSampleRate,
                        channels: plan.audioChannels,
                        bitrate: plan.audioBitRate,
                        source: audio
                    ),
                    file: file
                )
            }
            muxers = named.map(\.1)
            for (name, file) in named { try Self.open(file, name, files: files, chunk: chunk) }
        } catch {
            abort()
            throw error
        }
    }

    private var named: [(String, OutputFile)] {
        rungs.map { ($0.rendition.name, $0.file) } + (audioFile.map { [("audio", $0)] } ?? [])
    }

    private static func muxer(_ name: String, files: StagedFiles) throws(MediaError) -> OutputFile {
        do {
            return try OutputFile(path: files.pinnedTemporaryPath(of: "\(name).ffmpeg.m3u8"), formatName: "hls")
        } catch {
            throw MediaError(.internalError, "FFmpeg's hls muxer is not available", detail: "\(error)")
        }
    }

    private static func open(
        _ file: OutputFile,
        _ name: String,
        files: StagedFiles,
        chunk: LadderChunk?
    ) throws(MediaError) {
        do {
            try file.open(options: [
                // A chunk's first frame may lie up to a frame after its place on the 6 s grid,
                // and the muxer measures from it: a target a little short of 6 s still cuts at
                // the keyframe on the grid (the one before is 2 s earlier), for chunks of up to
                // 3 minutes (`LadderSplit.longestChunk`).
                "hls_time": chunk == nil ? "\(LadderOptions.segmentSeconds)" : "5.95",
                "hls_segment_type": "fmp4",
                "hls_playlist_type": "vod",
                "hls_list_size": "0",
                "start_number": "\(chunk?.firstSegment ?? 1)",
                // Beside the muxer's playlist, which is in the set's directory.
                "hls_fmp4_init_filename": files.temporaryName(of: "\(name)-init.mp4"),
                "hls_segment_filename": files.pinnedTemporaryPath(of: "\(name)-%05d.m4s"),
            ])
        } catch {
            throw MediaError(
                .outputUnwritable,
                "cannot start the \(name) rendition in \(files.directory): \(FFmpegLog.takeLastError() ?? "\(error)")"
            )
        }
    }

    /// Moves every picture of `output` through every rung; `progress` hears where the media
    /// has got to (µs from the start). The last picture is held: `endMedia(pictureEnd:)` pads
    /// the media to the program's end and ends the encoders.
    func encodeVideo(from output: AssetReaderTrackOutput, progress: (Int64) -> Void) throws(MediaError) {
        var end: Int64 = 0
        var checks = 0
        while let sample = try output.copyNextSample() {
            try checkOutput(&checks)
            guard case .video(let frame) = sample.payload else { continue }
            timeBase = sample.timeBase
            try picture(frame, at: sample.pts)
            end = sample.pts + sample.duration
            last = (frame, sample.duration)
            progress(sample.endMicroseconds)
        }
        videoEnd = end
    }

    /// Sends `frame`, shown from `pts` (the reader's time base), to every rung, an IDR at the
    /// first frame at or after each multiple of 2 s of the whole ladder.
    private func picture(_ frame: Frame, at pts: Int64) throws(MediaError) {
        let interval = Int64(LadderOptions.keyframeSeconds) * 1_000_000
        // On the whole ladder's grid: a chunk's frames are `offset` into it.
        let time = av_rescale_q(pts, timeBase, microsecondBase) + (chunk?.offset ?? 0)
        let keyframe = time >= nextKeyframe || framesWritten == 0
        if keyframe { nextKeyframe = (time / interval + 1) * interval }
        for rung in rungs { try take(frame, pts: pts, keyframe: keyframe, into: rung) }
        framesWritten += 1
    }

    /// Where the pictures read end, in µs from the start (`nil`: no video was encoded here).
    var pictureEnd: Int64? { videoEnd.map { av_rescale_q($0, timeBase, microsecondBase) } }

    /// Where the sound read ends, in µs from the start (`nil`: no audio was encoded here).
    var soundEnd: Int64? { audioEngine.map { av_rescale_q($0.endSample, $0.timeBase, microsecondBase) } }

    /// Ends every rendition at the program's end, the later of the picture's and the sound's
    /// (decision 155): the sound that ends first is padded with silence, the picture that ends
    /// first with its last picture, repeated at the source's frame spacing on the keyframe
    /// grid. `pictureEnd` is the picture's end when it is not encoded here (a split ladder's
    /// join). A chunk's pictures end where the next chunk's start. Returns what was padded, for
    /// the result's warnings.
    func endMedia(pictureEnd outside: Int64? = nil) throws(MediaError) -> [String] {
        let picture = pictureEnd ?? outside
        let sound = soundEnd
        let end = [picture, sound].compactMap { $0 }.max() ?? 0
        var padded: [String] = []
        if let chunk {
            try finishVideo(until: chunk.end.map { $0 - chunk.offset })
        } else if let picture, rungs.count > 0 {
            let frames = try finishVideo(until: end)
            if frames > 1 {
                padded.append(
                    "the picture ends \(Self.seconds(end - picture)) before the sound: its last picture is shown until the sound ends"
                )
            }
        }
        if let audioEngine, let sound {
            let goal = av_rescale_q(end, microsecondBase, audioEngine.timeBase)
            if goal - audioEngine.endSample > Int64(max(1, audioEngine.frameSize)) {
                padded.append(
                    "the sound ends \(Self.seconds(end - sound)) before the picture: it is padded with silence to the picture's end"
                )
            }
            try audioEngine.padSilence(until: goal)
            try audioEngine.finish()
        }
        return padded
    }

    /// Repeats the last picture until `target` (µs from the start) while a whole frame fits,
    /// the last one lasting until `target`; sends the held pictures and ends the encoders.
    /// Returns the number of pictures added.
    @discardableResult
    private func finishVideo(until target: Int64?) throws(MediaError) -> Int {
        guard var end = videoEnd else { return 0 }
        var added = 0
        if let target {
            let goal = av_rescale_q(target, microsecondBase, timeBase)
            if let last {
                // The source's frame spacing (its last frame's without a rate), between 1/60 s
                // and 1 s: a still picture's track may claim 90,000 fps, and the padding of a
                // long sound would then be millions of frames.
                let nominal = plan.video?.frameRateRational.map { av_rescale_q(1, av_inv_q($0.av), timeBase) }
                let bounds = (
                    av_rescale_q(1, AVRational(num: 1, den: 60), timeBase),
                    av_rescale_q(1, AVRational(num: 1, den: 1), timeBase)
                )
                let spacing = max(1, bounds.0, min(bounds.1, nominal ?? last.duration))
                while goal - end >= spacing {
                    try picture(last.frame, at: end)
                    end += spacing
                    added += 1
                }
            }
            end = chunk == nil ? max(end, goal) : goal
        }
        for rung in rungs {
            if let held = rung.held { try send(held, until: end, to: rung) }
            rung.held = nil
            try rung.engine.finish()
        }
        return added
    }

    static func seconds(_ microseconds: Int64) -> String {
        String(format: "%.3f s", Double(microseconds) / 1e6)
    }

    private func take(_ frame: Frame, pts: Int64, keyframe: Bool, into rung: Rung) throws(MediaError) {
        if keyframe {
            rung.sinceKeyframe = 0
        } else {
            rung.sinceKeyframe += 1
            if rung.halves && rung.sinceKeyframe % 2 == 1 { return }
        }
        let picture: Frame
        do {
            picture =
                rung.scaler.isIdentity(for: frame.pointer)
                ? try Frame.referencing(frame.pointer) : try rung.scaler.scale(frame.pointer)
        } catch {
            throw MediaError(.encodeFailed, "scaling a picture for \(rung.rendition.name) failed", detail: "\(error)")
        }
        if let held = rung.held { try send(held, until: pts, to: rung) }
        rung.held = (picture, pts, keyframe)
    }

    private func send(
        _ held: (frame: Frame, pts: Int64, keyframe: Bool),
        until end: Int64,
        to rung: Rung
    )
        throws(MediaError)
    {
        let sample = SampleBuffer(
            payload: .video(held.frame),
            pts: held.pts,
            duration: max(1, end - held.pts),
            timeBase: timeBase
        )
        try rung.engine.append(sample, keyframe: held.keyframe)
    }

    func encodeAudio(from output: AssetReaderTrackOutput, progress: (Int64) -> Void) throws(MediaError) {
        guard let audioEngine else { return }
        var checks = 0
        while let sample = try output.copyNextSample() {
            try checkOutput(&checks)
            try audioEngine.append(sample)
            progress(sample.endMicroseconds)
        }
    }

    /// Writes the muxers' trailers (the last segments), removes their playlists, and names the
    /// files each rendition wrote.
    func finish() throws(MediaError) -> (video: [LadderPackage.Rendition], audio: LadderPackage.Rendition?) {
        for (name, file) in named {
            do { try file.finish() } catch {
                abort()
                throw MediaError(
                    .outputUnwritable,
                    "cannot finish the \(name) rendition in \(files.directory): \(FFmpegLog.takeLastError() ?? "\(error)")"
                )
            }
            unlink(files.pinnedTemporaryPath(of: "\(name).ffmpeg.m3u8"))
        }
        let video = rungs.map { rung in
            LadderPackage.Rendition(
                name: rung.rendition.name,
                segments: segments(rung.rendition.name),
                frameRate: rung.rendition.frameRate ?? plan.video?.frameRate
            )
        }
        let audio = audioFile.map { _ in LadderPackage.Rendition(name: "audio", segments: segments("audio")) }
        // The files hold at least what was encoded (plus their boxes), unless writes were lost.
        let names = (video + (audio.map { [$0] } ?? [])).flatMap { [$0.initialization] + $0.segments }
        let onDisk = names.reduce(Int64(0)) { total, name in
            var info = stat()
            return total + (stat(files.pinnedTemporaryPath(of: name), &info) == 0 ? Int64(info.st_size) : 0)
        }
        if onDisk < encodedBytes {
            throw MediaError(
                .outputUnwritable,
                "cannot write the ladder into \(files.directory): its files hold \(onDisk) bytes of the \(encodedBytes) encoded (the disk is full or failing)"
            )
        }
        return (video, audio)
    }

    /// The segments the muxer wrote for `name`, numbered from 1 (a chunk's, from its first).
    private func segments(_ name: String) -> [String] {
        var names: [String] = []
        let first = chunk?.firstSegment ?? 1
        while true {
            let segment = "\(name)-\(String(format: "%05d", names.count + first)).m4s"
            guard access(files.pinnedTemporaryPath(of: segment), F_OK) == 0 else { return names }
            names.append(segment)
        }
    }

    func abort() { for file in muxers { file.abort() } }
}
