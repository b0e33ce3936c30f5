import Foundation

/// ffprobe's view of a file: the independent oracle the tests check outputs against.
public struct ProbeInfo: Decodable, Sendable {
    public struct Format: Decodable, Sendable {
        public var format_name: String
        public var duration: String?
        public var start_time: String?
        public var tags: [String: String]?

        public var durationSeconds: Double? { duration.flatMap(Double.init) }
        public var startSeconds: Double { start_time.flatMap(Double.init) ?? 0 }
    }

    public struct SideData: Decodable, Sendable {
        public var side_data_type: String?
        public var rotation: Int?
    }

    public struct Stream: Decodable, Sendable {
        public var index: Int
        public var codec_type: String
        public var codec_name: String?
        public var codec_tag_string: String?
        public var profile: String?
        public var width: Int?
        public var height: Int?
        public var pix_fmt: String?
        public var color_transfer: String?
        public var color_primaries: String?
        public var color_space: String?
        public var sample_aspect_ratio: String?
        public var sample_rate: String?
        public var channels: Int?
        public var channel_layout: String?
        public var start_time: String?
        public var duration: String?
        public var nb_frames: String?
        public var bit_rate: String?
        public var avg_frame_rate: String?
        public var side_data_list: [SideData]?
        public var tags: [String: String]?
        public var disposition: [String: Int]?

        public var startSeconds: Double? { start_time.flatMap(Double.init) }
        public var durationSeconds: Double? { duration.flatMap(Double.init) }
        public var sampleRate: Int? { sample_rate.flatMap(Int.init) }
        public var isAttachedPicture: Bool { disposition?["attached_pic"] == 1 }
        /// Average frames per second.
        public var frameRate: Double? {
            let parts = (avg_frame_rate ?? "").split(separator: "/").compactMap { Double($0) }
            guard parts.count == 2, parts[0] > 0, parts[1] > 0 else { return nil }
            return parts[0] / parts[1]
        }

        /// Clockwise degrees to display upright (ffprobe reports counter-clockwise, negated).
        public var rotation: Int {
            guard let value = side_data_list?.compactMap(\.rotation).first else { return 0 }
            return ((-value % 360) + 360) % 360
        }

        /// Width / height as displayed: sample aspect ratio and rotation applied.
        public var displayAspect: Double? {
            guard let width, let height, width > 0, height > 0 else { return nil }
            var sar = 1.0
            if let text = sample_aspect_ratio {
                let parts = text.split(separator: ":").compactMap { Double($0) }
                if parts.count == 2, parts[0] > 0, parts[1] > 0 { sar = parts[0] / parts[1] }
            }
            let aspect = Double(width) * sar / Double(height)
            return rotation % 180 == 0 ? aspect : 1 / aspect
        }

        /// Displayed width and height (SAR and rotation applied).
        public var displaySize: (width: Double, height: Double)? {
            guard let width, let height, let aspect = displayAspect else { return nil }
            let turned = rotation % 180 != 0
            let shownHeight = Double(turned ? width : height)
            return (shownHeight * aspect, shownHeight)
        }
    }

    public var format: Format
    public var streams: [Stream]

    /// The first video stream that is not a cover picture.
    public var video: Stream? { streams.first { $0.codec_type == "video" && !$0.isAttachedPicture } }
    public var audio: [Stream] { streams.filter { $0.codec_type == "audio" } }
}

public enum FFProbe {
    /// The mean luma PSNR (dB) of `a` against `b`, frame by frame, by ffmpeg's psnr filter
    /// (100 for identical pictures).
    public static func lumaPSNR(_ a: String, _ b: String) async throws -> Double {
        let result = try await ProcessRunner.check(
            "ffmpeg",
            ["-nostdin", "-v", "info", "-i", a, "-i", b, "-lavfi", "[0:v][1:v]psnr", "-f", "null", "-"]
        )
        guard let line = result.stderr.split(separator: "\n").last(where: { $0.contains("PSNR y:") }),
            let field = line.split(separator: " ").first(where: { $0.hasPrefix("y:") })
        else { throw ProbeFailure("ffmpeg's psnr filter printed no PSNR: \(result.stderr.suffix(300))") }
        if field.dropFirst(2) == "inf" { return 100 }
        guard let value = Double(field.dropFirst(2)) else { throw ProbeFailure("PSNR '\(field)' is not a number") }
        return value
    }

    /// The side data of the first frame of the first video stream (ffprobe's
    /// `side_data_list`: HDR10's mastering display and light level from the SEI), each entry
    /// as ffprobe prints it, with fractions (`34000/50000`) as numbers.
    public static func firstFrameSideData(_ path: String) async throws -> [String: [String: Double]] {
        let result = try await ProcessRunner.check(
            "ffprobe",
            [
                "-v", "error", "-print_format", "json", "-select_streams", "v:0", "-read_intervals", "%+#1",
                "-show_frames", path,
            ]
        )
        let json = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any]
        let frames = json?["frames"] as? [[String: Any]] ?? []
        var found: [String: [String: Double]] = [:]
        for entry in frames.first?["side_data_list"] as? [[String: Any]] ?? [] {
            guard let type = entry["side_data_type"] as? String else { continue }
            var values: [String: Double] = [:]
            for (key, value) in entry {
                if let number = value as? Double {
                    values[key] = number
                } else if let text = value as? String {
                    let parts = text.split(separator: "/").compactMap { Double($0) }
                    if parts.count == 2, parts[1] != 0 { values[key] = parts[0] / parts[1] }
                    if parts.count == 1 { values[key] = parts[0] }
                }
            }
            found[type] = values
        }
        return found
    }

    public static func probe(_ path: String) async throws -> ProbeInfo {
        let result = try await ProcessRunner.check(
            "ffprobe",
            ["-v", "error", "-print_format", "json", "-show_format", "-show_streams", path]
        )
        return try JSONDecoder().decode(ProbeInfo.self, from: result.stdout)
    }

    /// Presentation times (seconds, as in the file) of every frame of the first video stream,
    /// in display order, from decoding.
    public static func videoFrameTimes(_ path: String) async throws -> [Double] {
        let result = try await ProcessRunner.check(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=best_effort_timestamp_time", "-of",
                "csv=p=0", path,
            ]
        )
        return result.stdoutText.split(whereSeparator: \.isNewline).compactMap {
            Double($0.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: ","))))
        }.sorted()
    }

    /// Decoded audio sample count of audio stream `index` (0-based among audio streams).
    public static func audioSampleCount(_ path: String, audioStream index: Int = 0) async throws -> Int {
        let result = try await ProcessRunner.check(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "a:\(index)", "-show_entries", "frame=nb_samples", "-of", "csv=p=0",
                path,
            ]
        )
        return result.stdoutText.split(whereSeparator: \.isNewline).compactMap {
            Int($0.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: ","))))
        }.reduce(0, +)
    }

    /// Seconds of audio in the first audio stream of `path`: its decoded samples over its rate.
    public static func audioSeconds(_ path: String) async throws -> Double {
        guard let rate = try await probe(path).audio.first?.sampleRate, rate > 0 else { return 0 }
        return Double(try await audioSampleCount(path)) / Double(rate)
    }

    /// What `ffmpeg -v error -i PATH -f null -` prints: empty when the file decodes cleanly.
    public static func decodeErrors(_ path: String) async throws -> String {
        let result = try await ProcessRunner.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
        return (result.stderr + (result.status == 0 ? "" : "\n(exit \(result.status))")).trimmingCharacters(
            in: .whitespacesAndNewlines
        )
    }

    /// The times (seconds from the file's first sample) of the `count` loudest clicks of the
    /// first audio stream, decoded to mono at its own rate, at least 0.1 s apart, in order.
    public static func audioPeaks(_ path: String, count: Int) async throws -> [Double] {
        guard let audio = try await probe(path).audio.first, let rate = audio.sampleRate else { return [] }
        let result = try await ProcessRunner.check(
            "ffmpeg",
            ["-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-ac", "1", "-f", "f32le", "-"]
        )
        let samples = result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        var peaks: [Int] = []
        let spacing = rate / 10
        for _ in 0..<count {
            var best: Int?
            for index in samples.indices where !peaks.contains(where: { abs($0 - index) < spacing }) {
                if best.map({ abs(samples[index]) > abs(samples[$0]) }) ?? true { best = index }
            }
            guard let best else { break }
            peaks.append(best)
        }
        return peaks.sorted().map { Double($0) / Double(rate) }
    }

    /// The mean luma (0…255) of every frame of the first video stream, in order.
    public static func lumaMeans(_ path: String) async throws -> [Double] {
        guard let video = try await probe(path).video, let width = video.width, let height = video.height else {
            return []
        }
        let result = try await ProcessRunner.check(
            "ffmpeg",
            [
                "-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-vf", "format=gray", "-f", "rawvideo",
                "-fps_mode", "passthrough", "-",
            ]
        )
        let size = width * height
        let bytes = [UInt8](result.stdout)
        return stride(from: 0, to: bytes.count - size + 1, by: size).map { start in
            Double(bytes[start..<start + size].reduce(0) { $0 + Int($1) }) / Double(size)
        }
    }
}

/// ffprobe or ffmpeg said something a test cannot read.
public struct ProbeFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
