import Foundation
import Streaming

/// What a ladder job reports (`jobctl hls --json`, the job's `result.hls`): the files, each
/// rendition as encoded and as declared against what was measured, and the rules' findings.
public struct LadderResult: Sendable, Codable {
    public struct Rendition: Sendable, Codable, Hashable {
        public var name: String
        public var width: Int
        public var height: Int
        /// The encoder's target, bits per second.
        public var bitrate: Int
        public var frame_rate: Double?
        public var codecs: String
        public var segments: Int
        /// BANDWIDTH and AVERAGE-BANDWIDTH as declared (the audio included), and as measured.
        public var bandwidth: Int
        public var measured_peak: Int
        public var measured_average: Int
    }

    public struct Audio: Sendable, Codable, Hashable {
        public var codecs: String
        public var sample_rate: Int
        public var channels: Int
        public var bitrate: Int
        public var segments: Int
    }

    public struct Report: Sendable, Codable, Hashable {
        public var must: [String]
        public var should: [String]
    }

    /// The files once the set is committed (`jobctl hls --json`); a job lists them in its
    /// result's `files` instead.
    public var files: [WrittenFile]?
    public var master = "master.m3u8"
    public var manifest = "manifest.mpd"
    public var player = "player.html"
    /// Seconds: the longest rendition's playlist.
    public var duration: Double
    public var renditions: [Rendition]
    public var audio: Audio?
    /// Rungs asked for and left out as taller than the source (never upscaled).
    public var dropped: [String]
    public var report: Report
    public var warnings: [String]?

    init(
        plan: LadderPlan,
        written: (video: [LadderPackage.Rendition], audio: LadderPackage.Rendition?),
        package: LadderPackage.Package,
        warnings: [String]
    ) {
        duration = (package.duration * 1000).rounded() / 1000
        renditions = zip(plan.renditions, written.video).map { planned, files in
            let bandwidth = package.bandwidths[planned.name]
            return Rendition(
                name: planned.name,
                width: planned.width,
                height: planned.height,
                bitrate: planned.bitRate,
                frame_rate: files.frameRate.map { ($0 * 1000).rounded() / 1000 },
                codecs: package.codecs[planned.name] ?? "",
                segments: files.segments.count,
                bandwidth: bandwidth?.declared ?? 0,
                measured_peak: bandwidth?.measuredPeak ?? 0,
                measured_average: bandwidth?.measuredAverage ?? 0
            )
        }
        audio = written.audio.map { files in
            Audio(
                codecs: package.codecs[files.name] ?? "",
                sample_rate: plan.audioSampleRate,
                channels: plan.audioChannels,
                bitrate: plan.audioBitRate,
                segments: files.segments.count
            )
        }
        dropped = plan.dropped
        report = Report(
            must: package.findings.filter { $0.level == .must }.map(\.description),
            should: package.findings.filter { $0.level == .should }.map(\.description)
        )
        self.warnings = warnings.isEmpty ? nil : warnings
    }
}

/// `player.html`, written beside the playlists: a page with one `<video>` given
/// `master.m3u8`, for browsers that play HLS themselves (Safari, Chromium on Linux and Android,
/// Edge). No script, nothing fetched from elsewhere.
enum LadderPlayerPage {
    static func html(title: String) -> String {
        let escaped = title.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        return """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escaped)</title>
            <style>body{margin:0;background:#111;color:#eee;font:16px system-ui,sans-serif}
            main{max-width:960px;margin:0 auto;padding:1rem}video{width:100%;background:#000}
            a{color:#9cf}</style>
            </head>
            <body>
            <main>
            <h1>\(escaped)</h1>
            <video id="player" controls playsinline preload="metadata" src="master.m3u8" aria-label="\(escaped)"></video>
            <p>HLS: <a href="master.m3u8">master.m3u8</a> · DASH: <a href="manifest.mpd">manifest.mpd</a></p>
            </main>
            </body>
            </html>

            """
    }
}
