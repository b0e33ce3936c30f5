/// The `ffmpeg` command line that does the same work as `export` with a preset (docs/spec.md §2 `presets`).
///
/// It is printed for users and used by the benchmark as the baseline, so it must stay
/// equivalent: same tracks, same scaling arithmetic as `Fit.outputSize`, same encoders and
/// settings. Differences that cannot be expressed generically are documented in
/// `docs/presets.md` (mono sources are not upmixed; frame-accurate VFR trimming).
extension Preset {
    public var ffmpegCommand: String { ffmpegCommand(hdrSource: false) }

    /// The same for a PQ or HLG source (`nil` when the preset encodes no video): what `export`
    /// does with its `hdr` mode (`ColorPath`): the tone-map chain (`ToneMap.chain`) after the
    /// scale and BT.709 tags, or HDR kept in 10 bits with the source's HDR10 metadata (x265's
    /// `master-display` and `max-cll`, from `jobctl probe`).
    public var ffmpegHDRCommand: String? {
        guard let video, video.codec != .copy, format.holdsVideo else { return nil }
        return ffmpegCommand(hdrSource: true)
    }

    private func ffmpegCommand(hdrSource: Bool) -> String {
        var arguments = ["ffmpeg", "-i", "INPUT"]
        let holdsVideo = format.holdsVideo
        if video != nil && holdsVideo { arguments += ["-map", "0:v:0?"] }
        if audio != nil { arguments += ["-map", "0:a?"] }

        if let video, holdsVideo {
            switch video.codec {
            case .copy:
                arguments += ["-c:v", "copy"]
            case .h264, .hevc:
                let keeps = hdrSource && video.codec == .hevc && video.hdr != .tonemap
                let toneMaps = hdrSource && !keeps
                let filter =
                    Preset.scaleFilter(box: video.box) + (toneMaps ? ",format=yuv420p10le," + ToneMap.chain : "")
                arguments += ["-vf", "\"\(filter)\""]
                arguments += ["-c:v", video.codec.encoderName!]
                if let bitrate = video.bitrate { arguments += ["-b:v", Preset.rate(bitrate)] }
                if let crf = video.crf { arguments += ["-crf", "\(crf)"] }
                if let speed = video.encoderPreset { arguments += ["-preset", speed] }
                // A target bit rate with x264: slice threads, as export runs it (docs/ffmpeg.md #27).
                if video.codec == .h264, video.bitrate != nil, video.crf == nil {
                    arguments += ["-x264-params", "sliced-threads=1"]
                }
                arguments += ["-pix_fmt", keeps ? "yuv420p10le" : "yuv420p"]
                if toneMaps {
                    arguments += ["-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709"]
                }
                if video.codec == .hevc {
                    let hdr10 = keeps ? ":hdr10=1:hdr10-opt=1:master-display=SOURCE:max-cll=SOURCE" : ""
                    arguments += ["-tag:v", "hvc1", "-x265-params", "log-level=error" + hdr10]
                }
            }
        } else {
            arguments.append("-vn")
        }

        if let audio {
            switch audio.codec {
            case .copy:
                arguments += ["-c:a", "copy"]
            case .aac:
                arguments += ["-c:a", "aac"]
                if let bitrate = audio.bitrate { arguments += ["-b:a", Preset.rate(bitrate)] }
                if let channels = audio.channels { arguments += ["-ac", "\(channels)"] }
                if let sampleRate = audio.sampleRate { arguments += ["-ar", "\(sampleRate)"] }
            }
        } else {
            arguments.append("-an")
        }
        if isPassthrough { arguments += ["-map", "0:s?", "-c:s", "copy"] } else { arguments.append("-sn") }
        arguments += [
            "-dn", "-map_metadata:g", "-1", "-map_chapters", "-1", "-movflags", "+faststart", "-f", format.muxerName,
            "OUTPUT",
        ]
        return arguments.joined(separator: " ")
    }

    /// `300000` → `300k`, `1200000` → `1200k`.
    static func rate(_ bitsPerSecond: Int) -> String {
        bitsPerSecond % 1000 == 0 ? "\(bitsPerSecond / 1000)k" : "\(bitsPerSecond)"
    }

    /// A `scale` filter computing exactly `Fit.outputSize` on the (auto-rotated) input, then
    /// square pixels.
    static func scaleFilter(box: (width: Int, height: Int)?) -> String {
        let displayWidth = "iw*sar"
        var scale = "1"
        if let box {
            let long = max(box.width, box.height)
            let short = min(box.width, box.height)
            let landscape = "gte(\(displayWidth),ih)"
            let boxWidth = "if(\(landscape),\(long),\(short))"
            let boxHeight = "if(\(landscape),\(short),\(long))"
            scale = "min(1,min(\(boxWidth)/(\(displayWidth)),\(boxHeight)/ih))"
        }
        func even(_ length: String) -> String {
            "max(2,min(2*round(\(length)*\(scale)/2),2*trunc(\(length)/2)))"
        }
        return "scale=w='\(even(displayWidth))':h='\(even("ih"))',setsar=1"
    }
}
