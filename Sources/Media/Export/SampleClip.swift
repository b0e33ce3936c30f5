import CFFmpeg
import Foundation

/// Writes a synthetic clip with our own `AssetWriter` (AVFoundation's "writing frames with
/// AVAssetWriter"): 75% colour bars with a box that moves one step per frame and a frame
/// counter strip, and a 440 Hz tone that beeps at 880 Hz at the top of every second. Used by
/// `jobctl sample` and `make demo`, so no media file is ever committed.
public enum SampleClip {
    /// Writes `seconds` of H.264 + AAC stereo to `path`; returns the file's size.
    @discardableResult
    public static func write(
        to path: String,
        seconds: Int = 10,
        size: PictureSize = PictureSize(width: 640, height: 360),
        frameRate: Int = 25
    ) throws(MediaError) -> Int64 {
        FFmpegLog.install()
        guard seconds > 0, frameRate > 0, size.width >= 16, size.height >= 16, size.width % 2 == 0, size.height % 2 == 0
        else {
            throw MediaError(
                .internalError,
                "a sample clip needs a positive duration and frame rate and an even size of at least 16x16"
            )
        }
        let format = ContainerFormat(pathExtension: (path as NSString).pathExtension) ?? .mp4
        let writer = try AssetWriter(destination: path, format: format)
        let videoTrack = syntheticTrack(
            index: 0,
            timeBase: Rational(num: 1, den: frameRate),
            frameRate: Rational(num: frameRate, den: 1)
        )
        let audioTrack = syntheticTrack(index: 1, timeBase: Rational(num: 1, den: 44100), frameRate: nil)
        let video = AssetWriterInput(
            settings: .video(.init(codec: .h264, size: size, crf: 23, encoderPreset: "veryfast", source: videoTrack))
        )
        let audio = AssetWriterInput(
            settings: .audio(.init(sampleRate: 44100, channels: 2, bitrate: 128_000, source: audioTrack))
        )
        do throws(MediaError) {
            try writer.add(video)
            try writer.add(audio)
            try writer.startWriting()
            let painter = try BarsPainter(size: size)
            let tone = Tone()
            let frames = seconds * frameRate
            for index in 0..<frames {
                let frame = try painter.frame(index, of: frames)
                try video.append(
                    SampleBuffer(
                        payload: .video(frame),
                        pts: Int64(index),
                        duration: 1,
                        timeBase: AVRational(num: 1, den: Int32(frameRate))
                    )
                )
                // Keep audio level with video so the muxer interleaves them.
                let until = Int64(index + 1) * 44100 / Int64(frameRate)
                while tone.position < until {
                    let buffer = try tone.next(count: Int32(min(1024, until - tone.position)))
                    try audio.append(buffer)
                }
            }
            try video.markAsFinished()
            try audio.markAsFinished()
            return try writer.finishWriting()
        } catch {
            writer.fail(error)
            throw error
        }
    }

    private static func syntheticTrack(index: Int, timeBase: Rational, frameRate: Rational?) -> AssetTrack {
        AssetTrack(
            index: index,
            mediaType: frameRate == nil ? .audio : .video,
            codec: "rawvideo",
            isDefault: true,
            isDecodable: true,
            timeBase: timeBase,
            frameRateRational: frameRate,
            colorPrimaries: "bt709",
            colorTransfer: "bt709",
            colorSpace: "bt709"
        )
    }

    /// Paints frames row by row from precomputed rows, so it is fast even in debug builds.
    private final class BarsPainter {
        let width: Int
        let height: Int
        private var lumaRow: [UInt8]
        private var chromaRows: ([UInt8], [UInt8])

        init(size: PictureSize) throws(MediaError) {
            let width = size.width
            self.width = width
            height = size.height
            // 75% bars, BT.709 limited range: white, yellow, cyan, green, magenta, red, blue.
            let bars: [(UInt8, UInt8, UInt8)] = [
                (180, 128, 128), (168, 44, 136), (145, 147, 44), (133, 63, 52), (63, 193, 204), (51, 109, 212),
                (28, 212, 120),
            ]
            lumaRow = (0..<width).map { bars[min(6, $0 * 7 / width)].0 }
            chromaRows = (
                (0..<width / 2).map { bars[min(6, $0 * 2 * 7 / width)].1 },
                (0..<width / 2).map { bars[min(6, $0 * 2 * 7 / width)].2 }
            )
        }

        func frame(_ index: Int, of count: Int) throws(MediaError) -> Frame {
            let frame: Frame
            do { frame = try Frame.video(width: Int32(width), height: Int32(height), format: AV_PIX_FMT_YUV420P) } catch
            {
                throw MediaError(.internalError, "allocating a frame failed", detail: "\(error)")
            }
            for (plane, row) in [(0, lumaRow), (1, chromaRows.0), (2, chromaRows.1)] {
                let rows = plane == 0 ? height : height / 2
                let stride = frame.linesize(plane)
                let base = frame.plane(plane)
                row.withUnsafeBufferPointer { source in
                    for y in 0..<rows { (base + y * stride).update(from: source.baseAddress!, count: source.count) }
                }
            }
            // A black box bouncing left to right, one step per frame…
            let box = max(8, height / 6) & ~1
            let travel = max(1, width - box)
            let step = (index * 8) % (2 * travel)
            let x = (step < travel ? step : 2 * travel - step) & ~1
            let y = (height / 2 - box / 2) & ~1
            fill(frame, x: x, y: y, width: box, height: box, luma: 16)
            // …and a white strip along the bottom whose length counts the frames.
            let strip = max(2, height / 30) & ~1
            fill(
                frame,
                x: 0,
                y: height - strip,
                width: max(2, (width * (index + 1) / count) & ~1),
                height: strip,
                luma: 235
            )
            return frame
        }

        private func fill(_ frame: Frame, x: Int, y: Int, width: Int, height: Int, luma: UInt8) {
            for row in y..<min(self.height, y + height) {
                (frame.plane(0) + row * frame.linesize(0) + x).update(
                    repeating: luma,
                    count: min(width, self.width - x)
                )
            }
            for plane in 1...2 {
                for row in (y / 2)..<min(self.height / 2, (y + height) / 2) {
                    (frame.plane(plane) + row * frame.linesize(plane) + x / 2).update(
                        repeating: 128,
                        count: min(width, self.width - x) / 2
                    )
                }
            }
        }
    }

    /// A stereo tone: 440 Hz, with an 880 Hz beep during the first 100 ms of every second.
    private final class Tone {
        private(set) var position: Int64 = 0
        private var layout = AVChannelLayout()

        init() { av_channel_layout_default(&layout, 2) }
        deinit { av_channel_layout_uninit(&layout) }

        func next(count: Int32) throws(MediaError) -> SampleBuffer {
            let frame: Frame
            do {
                frame = try Frame.audio(samples: count, format: AV_SAMPLE_FMT_FLTP, layout: &layout, sampleRate: 44100)
            } catch {
                throw MediaError(.internalError, "allocating audio failed", detail: "\(error)")
            }
            for channel in 0..<2 {
                let samples = UnsafeMutableRawPointer(frame.plane(channel)).assumingMemoryBound(to: Float.self)
                for offset in 0..<Int(count) {
                    let n = position + Int64(offset)
                    let beep = n % 44100 < 4410
                    let phase = 2 * Double.pi * (beep ? 880 : 440) * Double(n) / 44100
                    samples[offset] = Float(sin(phase) * (beep ? 0.5 : 0.2))
                }
            }
            frame.pts = position
            let buffer = SampleBuffer(
                payload: .audio(frame),
                pts: position,
                duration: Int64(count),
                timeBase: AVRational(num: 1, den: 44100)
            )
            position += Int64(count)
            return buffer
        }
    }
}
