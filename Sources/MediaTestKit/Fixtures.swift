// Over 400 lines on purpose: one table of ~40 fixtures, each case next to the ffmpeg command
// that makes it, so a reader sees what a test's input is without jumping between files.

import Foundation

/// Test inputs, generated with the ffmpeg CLI (never committed): small (a few seconds,
/// 320x240) files covering real-world shapes, plus deliberately bad ones.
public enum Fixture: String, CaseIterable, Sendable, CustomStringConvertible {
    // Real-world shapes.
    case basic  // mp4, H.264 High with B-frames, AAC stereo 48 kHz, moov at the end
    case faststart  // the same with the index at the front
    case vfr  // variable frame rate: 25 fps for 2 s, then 50 fps
    case rotated  // display matrix: shown rotated 90° clockwise (a phone video)
    case rotated180  // shown upside down: the matrix reads as −180° (av_display_rotation_get)
    case rotated180Other  // upside down, skewed a hair the other way: the matrix reads as +179.999°
    case rotated270  // shown rotated 270° clockwise (the matrix reads as +90°: a phone held the other way)
    case anamorphic  // 480x360 with SAR 4:3 (shown 640x360)
    case odd444  // 321x241, 4:4:4, mono 22.05 kHz audio
    case tenBitMatroska  // Matroska, H.264 High 10 (yuv420p10le), AC-3 audio
    case surround  // AAC 5.1
    case multiAudio  // two audio tracks (eng stereo 48 kHz, fra mono 44.1 kHz)
    case audioOnly  // FLAC stereo
    // AAC stereo (440/660 Hz) encoded without noise substitution: decodes to the same samples
    // whichever packet decoding starts from (docs/waveforms.md), so a range is bit-exact.
    case aacPlain
    case videoOnly  // H.264 without audio
    case transportStream  // MPEG-TS, open GOP, B-frames, one keyframe per 3 s, PTS offset 3600 s
    case webm  // VP9 + Opus
    case avi  // MPEG-4 Part 2 + MP3 in AVI
    case prores  // MOV, ProRes 4:2:2 10-bit + PCM
    // Frame accuracy: every frame a different flat grey (luma 16 + 2·n), keyframe every 10 frames.
    case greyRamp
    case greyRampTS  // the same in MPEG-TS with a PTS offset
    case greyRampVFR  // 25 fps for 2 s, then 50 fps (100 frames, luma 16 + 2·n)
    case greyRampOpenGOP  // open GOP, 3 B-frames, a keyframe every 12 frames
    case greyRampRotated  // the grey ramp shown rotated 90° clockwise
    case greyRampAnamorphic  // the grey ramp with SAR 2:1 (64x48 shown 128x48)
    // Sync: the grey ramp with PCM audio (48 kHz) that clicks at exactly 1.5 s and 2.5 s.
    case impulses
    // An 8x8 picture: too small for x265.
    case tiny
    // A 20 s clip that is slow to encode, for cancellation and progress.
    case long
    // A slide show: 2 fps for 40 s with a tone. An encoder's lookahead (40 pictures) holds 20 s
    // of it, so the audio reaches the muxer far ahead of the video (docs/decisions.md #153).
    case slideshow
    // Split-and-stitch (issue 27): 24 s with B-frames and a tone, at 25 fps; and 30, 24 then
    // 15 fps (8 s each, variable frame rate).
    case splitCFR
    case splitVFR
    // 12 s at 25 fps with a scene cut at 4.6 s (test bars after the test pattern).
    case splitScenes
    // HDR (issue 44): 2 s of HEVC Main10 with AAC, tagged BT.2020; PQ with HDR10's mastering
    // display (P3 D65, 0.0001–1000 cd/m²) and light level (MaxCLL 1000, MaxFALL 400) in the
    // bitstream's SEI (as x265 and phones write them), and HLG (no static metadata).
    case hdr10
    case hlg
    case hlgRotated  // hlg shown rotated 90° clockwise (a phone's HLG video held upright)
    // Bad inputs.
    case notMedia
    case empty
    case truncatedMoovAtEnd  // basic cut in half: its index is gone
    case truncatedFaststart  // faststart cut in half: index intact, media data missing
    case corrupted  // transportStream with a sixth of its bytes overwritten
    case garbage  // faststart with every media byte replaced by noise
    case subtitleSource  // an .srt file
    case subtitleOnly  // Matroska with only a subtitle track
    case playlist  // an HLS playlist naming /etc/passwd, then a file beside it
    case encryptedMP4  // basic, 1 s, with Common Encryption (cenc-aes-ctr), no key given to the reader
    case encryptedWebM  // one VP9 frame behind WebM encryption (a key id in the track header)
    case tinyWAV  // 20 samples of PCM at 80 kHz (0.25 ms): too little to encode
    case extremeSAR  // 320x240 with a pixel aspect ratio of 100:1 (shown 32000x240)
    // Real-world shapes from a player's corpus (issue 31), generated.
    case fragmented  // basic as fragmented MP4 (empty moov, a fragment per keyframe)
    case fragmentedIndeterminate  // the same with every header duration "indeterminate" (all ones)
    case eac3  // H.264 + E-AC-3 5.1 in MP4, 3 s
    case audioGap  // Matroska FLAC tone: 1 s, a 0.5 s gap in the timestamps, 2 s more
    case video8K  // 7680x4320 H.264, 1 s
    case junkPrefixedMP3  // 100 kB of 0xDEADBEEF, then a 2 s MP3
    case stillJPEG  // one 640x480 JPEG picture
    case stillPNG  // one 320x240 PNG picture
    case hugeWebP  // one 9000x4500 WebP picture: its size is known only to its decoder
    // Limits (docs/spec.md §7): small files that claim a lot.
    case lateAudio  // Matroska: 2 s of video, its audio starting 1 hour later
    // Matroska, two FLAC tracks: 36 s mono 22.05 kHz, and 1 s mono 16 kHz starting at 35 s
    // (a late track that a mix must not wait 35 s of buffered audio for).
    case lateSecondTrack
    // Matroska, two FLAC tracks: 40 s mono 22.05 kHz, and 3 s mono 16 kHz from 0 (a track that
    // ends 37 s before the other: the mix must not wait for it either).
    case shortSecondTrack
    case hugeDeclaredDuration  // the same with the audio 10,000,000 s later
    case timestampJump  // Matroska video: after frame 50, timestamps jump by 1 hour (150 frames)
    case hugePicture  // 8192x8192, two frames, about 200 KB
    case growingPicture  // raw H.264: 160x120 for 1 s, then an 8192x8192 picture
    case manyTracks  // Matroska with 70 short audio tracks
    case understatedDuration  // videoOnly (4 s) whose headers claim 1 s
    // Headers that claim another length than the media holds (issue 42), and their damaged kin.
    case mp3InfoOverstated  // 0.4 s of CBR MP3 (mono 44.1 kHz) whose Info header counts 220 s of frames
    case mp3XingOverstated  // 0.4 s of VBR MP3 whose Xing header counts 220 s
    case mp3VBRIOverstated  // 0.4 s of MP3 with a VBRI header (no Xing) counting 220 s
    case mp3APETagged  // 0.4 s of MP3 without Xing, then a 3.5 MB APE tag: FFmpeg's estimate says 219 s
    case flacTotalOverstated  // 2 s of FLAC (stereo 44.1 kHz) whose STREAMINFO counts 220 s of samples
    case flacVariableBlocks  // 2 s of FLAC in blocks of 1152, 4608 and 576 samples (variable block size)
    case opusGranuleOverstated  // 2 s of Opus whose last granule position says 12 s
    case vorbisGranuleOverstated  // 2 s of Vorbis whose last granule position says 12 s
    case flacTruncated  // flacTotalOverstated's 2 s cut in the middle of a frame (damage, not a lie)
    // Audio formats the CLI reads that no tool here writes but Musepack's encoder (DSD by hand).
    case dsf  // DSD64 stereo, 1 s: 440 Hz left, 660 Hz right
    case dff  // the same as DSDIFF
    case musepackSV8  // Musepack SV8 (mpcenc), stereo 44.1 kHz, 2 s
    case stereoWAV  // 2 s of PCM, stereo 44.1 kHz, 440 Hz: what Musepack's encoder reads
    // Fuzzing seeds: 2 s, 160x120, one per container (FuzzTests flips their bytes).
    case seedMP4, seedMOV, seedMKV, seedTS, seedAVI, seedMP3

    public var description: String { rawValue }

    /// The real-world inputs every preset is exported from in the matrix.
    public static let realWorld: [Fixture] = [
        .basic, .faststart, .vfr, .rotated, .anamorphic, .odd444, .tenBitMatroska, .surround, .multiAudio,
        .audioOnly, .videoOnly, .transportStream, .webm, .avi, .prores,
    ]

    public var fileExtension: String {
        switch self {
        case .tenBitMatroska, .subtitleOnly, .lateSecondTrack, .shortSecondTrack: "mkv"
        case .audioOnly: "flac"
        case .aacPlain: "m4a"
        case .transportStream, .greyRampTS, .corrupted: "ts"
        case .webm: "webm"
        case .avi: "avi"
        case .prores, .impulses: "mov"
        case .notMedia: "mp4"
        case .empty: "mov"
        case .subtitleSource: "srt"
        case .playlist: "m3u8"
        case .encryptedWebM: "webm"
        case .audioGap: "mkv"
        case .junkPrefixedMP3: "mp3"
        case .stillJPEG: "jpg"
        case .stillPNG: "png"
        case .hugeWebP: "webp"
        case .tinyWAV: "wav"
        case .lateAudio, .hugeDeclaredDuration, .timestampJump, .manyTracks: "mkv"
        case .growingPicture: "h264"
        case .seedMOV: "mov"
        case .seedMKV: "mkv"
        case .seedTS: "ts"
        case .seedAVI: "avi"
        case .seedMP3: "mp3"
        case .mp3InfoOverstated, .mp3XingOverstated, .mp3VBRIOverstated, .mp3APETagged: "mp3"
        case .flacTotalOverstated, .flacVariableBlocks, .flacTruncated: "flac"
        case .opusGranuleOverstated: "opus"
        case .vorbisGranuleOverstated: "ogg"
        case .dsf: "dsf"
        case .dff: "dff"
        case .musepackSV8: "mpc"
        case .stereoWAV: "wav"
        default: "mp4"
        }
    }

    enum Recipe {
        /// ffmpeg arguments; `OUT` is replaced by the output path.
        case ffmpeg([String])
        /// ffmpeg reading another fixture (`IN`).
        case ffmpegFrom(Fixture, [String])
        /// ffmpeg writing to a pipe (a file whose header could not be finished).
        case ffmpegStdout([String])
        /// The fixtures' bytes one after the other.
        case concatenation([Recipe])
        case text(String)
        case data(Data)
        case derived(Fixture, Transform)
        /// The playlist, with a revision (a changed text gets a new cached file).
        case playlist(Fixture, revision: Int)
        /// What a recipe makes, transformed.
        indirect case patched(Recipe, Transform)
        /// A tool other than ffmpeg (`IN`: the fixture's path, `OUT`: the output).
        case tool(String, Fixture, [String])
        /// The FLAC files' frames as one stream with variable block sizes.
        case variableBlockFLAC([Recipe])
        /// DSD written by hand (`DSDFiles`): `dff` or `dsf`.
        case dsd(String, seconds: Double)
    }

    enum Transform {
        case truncate(fraction: Double)
        case rotate(degrees: Int)
        case overwrite(from: Double, to: Double)
        case noiseInMediaData
        /// Version-0 `mvhd`, `tkhd` and `mdhd` durations divided: the samples stay.
        case divideDeclaredDurations(by: UInt32)
        /// Version-0 `mvhd`, `tkhd`, `mdhd` and `mehd` durations set to all ones (ISO BMFF's
        /// "indeterminate", as live recorders and packagers write fragmented MP4).
        case indeterminateDeclaredDurations
        /// `LyingHeaders`: an MP3's Xing/Info frame count, a VBRI header instead, an APE tag
        /// appended, a FLAC's STREAMINFO total, an Ogg stream's last granule moved on.
        case xingFrames(UInt32)
        case vbriFrames(UInt32)
        case apeTag(coverBytes: Int)
        case flacTotalSamples(UInt64)
        case lastGranuleLater(by: Int64)
    }

    private static func video(_ size: String = "320x240", rate: Int = 25) -> [String] {
        ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate)"]
    }
    private static func tone(_ rate: Int = 48000, frequency: Int = 440) -> [String] {
        ["-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=\(rate)"]
    }
    /// x265's HDR10 parameters of `hdr10`: P3 primaries, D65, 0.0001–1000 cd/m²; MaxCLL 1000,
    /// MaxFALL 400.
    public static let hdr10Metadata =
        "master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400"
    private static let x264 = ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p"]
    private static let greyFrames = [
        "-f", "lavfi", "-i", "color=c=black:s=64x48:r=25:d=4,format=gray,geq=lum='16+2*N'",
    ]
    private static let greyEncoding = [
        "-c:v", "libx264", "-preset", "veryfast", "-qp", "0", "-pix_fmt", "yuv420p", "-x264-params",
        "keyint=10:min-keyint=10:scenecut=0:bframes=2",
    ]

    var recipe: Recipe {
        let seconds = ["-t", "4"]
        switch self {
        case .basic:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds + Self.x264 + [
                    "-x264-params", "keyint=50:bframes=2", "-c:a", "aac", "-ac", "2", "OUT",
                ]
            )
        case .faststart:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds + Self.x264 + [
                    "-x264-params", "keyint=50:bframes=2", "-c:a", "aac", "-ac", "2", "-movflags", "+faststart", "OUT",
                ]
            )
        case .vfr:
            return .ffmpeg(
                Self.video(rate: 50) + Self.tone() + seconds + [
                    "-vf", "select='if(lt(t,2),not(mod(n,2)),1)'", "-fps_mode", "vfr",
                ] + Self.x264 + ["-c:a", "aac", "OUT"]
            )
        case .rotated:
            return .derived(.basic, .rotate(degrees: 90))
        case .hlgRotated:
            return .derived(.hlg, .rotate(degrees: 90))
        case .rotated180:
            return .derived(.basic, .rotate(degrees: 180))
        case .rotated180Other:
            return .derived(.basic, .rotate(degrees: -180))
        case .rotated270:
            return .derived(.basic, .rotate(degrees: 270))
        case .anamorphic:
            return .ffmpeg(
                Self.video("480x360") + Self.tone() + seconds + ["-vf", "setsar=4/3"] + Self.x264 + [
                    "-c:a", "aac", "OUT",
                ]
            )
        case .odd444:
            return .ffmpeg(
                ["-f", "lavfi", "-i", "testsrc=size=321x241:rate=25"] + Self.tone(22050) + seconds
                    + ["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv444p", "-c:a", "aac", "OUT"]
            )
        case .tenBitMatroska:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds + [
                    "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p10le", "-c:a", "ac3", "-ac", "2",
                    "OUT",
                ]
            )
        case .surround:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds
                    + [
                        "-filter_complex", "[1:a]pan=5.1|c0=c0|c1=0.5*c0|c2=c0|c3=c0|c4=0.8*c0|c5=0.3*c0[a]", "-map",
                        "0:v", "-map", "[a]",
                    ]
                    + Self.x264 + ["-c:a", "aac", "OUT"]
            )
        case .multiAudio:
            return .ffmpeg(
                Self.video() + Self.tone() + Self.tone(44100, frequency: 880) + seconds
                    + ["-map", "0:v", "-map", "1:a", "-map", "2:a"] + Self.x264
                    + [
                        "-c:a", "aac", "-ac:a:0", "2", "-metadata:s:a:0", "language=eng", "-metadata:s:a:1",
                        "language=fra", "-disposition:a:0", "default", "-disposition:a:1", "0", "OUT",
                    ]
            )
        case .audioOnly:
            return .ffmpeg(Self.tone(44100) + seconds + ["-ac", "2", "-c:a", "flac", "OUT"])
        case .lateSecondTrack:
            return .ffmpeg(
                ["-f", "lavfi", "-i", "sine=frequency=300:sample_rate=22050:duration=36"]
                    + ["-itsoffset", "35", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=16000:duration=1"]
                    + ["-map", "0:a", "-map", "1:a", "-c:a", "flac", "OUT"]
            )
        case .shortSecondTrack:
            return .ffmpeg(
                ["-f", "lavfi", "-i", "sine=frequency=300:sample_rate=22050:duration=40"]
                    + ["-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=16000:duration=3"]
                    + ["-map", "0:a", "-map", "1:a", "-c:a", "flac", "OUT"]
            )
        case .aacPlain:
            return .ffmpeg(
                Self.tone() + Self.tone(frequency: 660) + seconds
                    + ["-filter_complex", "[0:a][1:a]join=inputs=2:channel_layout=stereo[a]", "-map", "[a]"]
                    + ["-c:a", "aac", "-aac_pns", "0", "OUT"]
            )
        case .videoOnly:
            return .ffmpeg(Self.video() + seconds + Self.x264 + ["OUT"])
        case .transportStream:
            return .ffmpeg(
                Self.video() + Self.tone() + ["-t", "6"] + Self.x264
                    + [
                        "-x264-params", "keyint=75:min-keyint=75:scenecut=0:open-gop=1:bframes=3", "-c:a", "aac",
                        "-output_ts_offset", "3600", "-f", "mpegts", "OUT",
                    ]
            )
        case .webm:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds + [
                    "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "300k", "-c:a", "libopus",
                    "OUT",
                ]
            )
        case .avi:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds + ["-c:v", "mpeg4", "-q:v", "5", "-c:a", "libmp3lame", "OUT"]
            )
        case .hdr10, .hlg:
            let hdr10 = self == .hdr10
            let transfer = hdr10 ? "smpte2084" : "arib-std-b67"
            let metadata = hdr10 ? ":hdr10=1:\(Self.hdr10Metadata)" : ""
            return .ffmpeg(
                Self.video() + Self.tone() + ["-t", "2", "-vf", "format=yuv420p10le"] + [
                    "-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
                    "log-level=error:repeat-headers=1:colorprim=bt2020:transfer=\(transfer):colormatrix=bt2020nc"
                        + metadata,
                    "-color_primaries", "bt2020", "-color_trc", transfer, "-colorspace", "bt2020nc", "-tag:v", "hvc1",
                    "-c:a", "aac", "OUT",
                ]
            )
        case .prores:
            return .ffmpeg(
                Self.video() + Self.tone() + seconds + [
                    "-c:v", "prores_ks", "-profile:v", "0", "-c:a", "pcm_s16le", "OUT",
                ]
            )
        case .greyRamp:
            return .ffmpeg(Self.greyFrames + Self.greyEncoding + ["OUT"])
        case .greyRampTS:
            return .ffmpeg(Self.greyFrames + Self.greyEncoding + ["-output_ts_offset", "100", "-f", "mpegts", "OUT"])
        case .greyRampVFR:
            return .ffmpeg(
                [
                    "-f", "lavfi", "-i",
                    "color=c=black:s=64x48:r=50:d=3,select='if(lt(n,100),not(mod(n,2)),1)',format=gray,geq=lum='16+2*N'",
                    "-fps_mode", "vfr",
                ] + Self.greyEncoding + ["OUT"]
            )
        case .greyRampOpenGOP:
            return .ffmpeg(
                Self.greyFrames + [
                    "-c:v", "libx264", "-preset", "veryfast", "-qp", "0", "-pix_fmt", "yuv420p", "-x264-params",
                    "keyint=12:min-keyint=12:scenecut=0:open-gop=1:bframes=3", "OUT",
                ]
            )
        case .greyRampRotated:
            return .derived(.greyRamp, .rotate(degrees: 90))
        case .greyRampAnamorphic:
            return .ffmpeg(Self.greyFrames + ["-vf", "setsar=2/1"] + Self.greyEncoding + ["OUT"])
        case .impulses:
            return .ffmpeg(
                Self.greyFrames + ["-f", "lavfi", "-i", "aevalsrc=exprs='0.9*(eq(n,72000)+eq(n,120000))':s=48000:d=4"]
                    + Self.greyEncoding + ["-c:a", "pcm_s16le", "OUT"]
            )
        case .tiny:
            return .ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=8x8:rate=25", "-t", "1"] + Self.x264 + ["OUT"])
        case .splitCFR:
            return .ffmpeg(
                Self.video() + Self.tone(frequency: 330) + ["-t", "24"] + Self.x264 + [
                    "-x264-params", "keyint=60:bframes=3", "-c:a", "aac", "-ac", "2", "OUT",
                ]
            )
        case .splitScenes:
            return .ffmpeg(
                [
                    "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=4.6", "-f", "lavfi", "-i",
                    "smptebars=size=320x240:rate=25:duration=7.4",
                ] + Self.tone(frequency: 330) + [
                    "-filter_complex", "[0:v][1:v]concat=n=2:v=1:a=0[v]", "-map", "[v]", "-map", "2:a", "-t", "12",
                ] + Self.x264 + ["-c:a", "aac", "OUT"]
            )
        case .splitVFR:
            return .ffmpeg(
                ["30", "24", "15"].flatMap { ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=\($0):duration=8"] }
                    + Self.tone(frequency: 330) + [
                        "-filter_complex", "[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]", "-map", "[v]", "-map", "3:a", "-t",
                        "24", "-fps_mode", "vfr", "-video_track_timescale", "90000",
                    ] + Self.x264 + ["-c:a", "aac", "OUT"]
            )
        case .long:
            // Temporal noise makes encoding it expensive (~10 s with `highest` in a debug build),
            // so a cancel always lands mid-export, however fast the machine.
            return .ffmpeg(
                ["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25,noise=alls=40:allf=t"] + Self.tone()
                    + [
                        "-t", "20", "-c:v", "libx264", "-preset", "ultrafast", "-crf", "30", "-pix_fmt", "yuv420p",
                        "-c:a", "aac", "OUT",
                    ]
            )
        case .slideshow:
            return .ffmpeg(
                Self.video("640x360", rate: 2) + Self.tone() + ["-t", "40"] + Self.x264 + [
                    "-c:a", "aac", "-ac", "2", "OUT",
                ]
            )
        case .notMedia:
            return .text(String(repeating: "This is a text file, not a video.\n", count: 200))
        case .empty:
            return .text("")
        case .truncatedMoovAtEnd:
            return .derived(.basic, .truncate(fraction: 0.5))
        case .truncatedFaststart:
            return .derived(.faststart, .truncate(fraction: 0.5))
        case .corrupted:
            return .derived(.transportStream, .overwrite(from: 0.45, to: 0.62))
        case .garbage:
            return .derived(.faststart, .noiseInMediaData)
        case .subtitleSource:
            return .text("1\n00:00:00,500 --> 00:00:02,000\nHello\n\n2\n00:00:02,500 --> 00:00:03,500\nWorld\n")
        case .subtitleOnly:
            return .ffmpegFrom(.subtitleSource, ["-i", "IN", "-c:s", "srt", "OUT"])
        case .encryptedMP4:
            return .ffmpegFrom(
                .basic,
                [
                    "-i", "IN", "-t", "1", "-c", "copy", "-encryption_scheme", "cenc-aes-ctr", "-encryption_key",
                    "76a6c65c5ea762046bd749a2e632ccbb", "-encryption_kid", "a7e61c373e219033c21091fa607bf3b8", "OUT",
                ]
            )
        case .encryptedWebM:
            return .data(EncryptedWebM.make())
        case .fragmented:
            return .ffmpegFrom(.basic, ["-i", "IN", "-c", "copy", "-movflags", "frag_keyframe+empty_moov", "OUT"])
        case .fragmentedIndeterminate:
            return .derived(.fragmented, .indeterminateDeclaredDurations)
        case .eac3:
            return .ffmpeg(
                Self.video() + ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "3"] + Self.x264
                    + ["-c:a", "eac3", "-ac", "6", "-b:a", "384k", "OUT"]
            )
        case .audioGap:
            return .ffmpeg(
                Self.tone(48000) + [
                    "-t", "3", "-af", "asetpts='if(gte(T,1),PTS+0.5/TB,PTS)'", "-c:a", "flac", "OUT",
                ]
            )
        case .video8K:
            return .ffmpeg(
                Self.video("7680x4320", rate: 24) + [
                    "-t", "1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "OUT",
                ]
            )
        case .junkPrefixedMP3:
            return .concatenation([
                .data(Data((0..<25_600).flatMap { _ in [0xDE, 0xAD, 0xBE, 0xEF] as [UInt8] })),
                .ffmpeg(Self.tone(44100) + ["-t", "2", "-c:a", "libmp3lame", "-f", "mp3", "OUT"]),
            ])
        case .stillJPEG, .stillPNG, .hugeWebP:
            let size = self == .stillJPEG ? "640x480" : self == .stillPNG ? "320x240" : "9000x4500"
            let codec =
                self == .stillJPEG ? ["-c:v", "mjpeg"] : self == .stillPNG ? ["-c:v", "png"] : ["-c:v", "libwebp"]
            return .ffmpeg(Self.video(size) + ["-frames:v", "1"] + codec + ["OUT"])
        case .extremeSAR:
            return .ffmpeg(Self.video() + seconds + ["-vf", "setsar=100/1"] + Self.x264 + ["OUT"])
        case .tinyWAV:
            return .ffmpeg(
                [
                    "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=80000", "-af", "atrim=end_sample=20", "-c:a",
                    "pcm_s16le", "OUT",
                ]
            )
        case .playlist:
            return .playlist(.basic, revision: 2)
        case .lateAudio, .hugeDeclaredDuration:
            let offset = self == .lateAudio ? "3600" : "10000000"
            return .ffmpeg(
                Self.video("160x120") + ["-itsoffset", offset] + Self.tone(44100)
                    + [
                        "-t", "2", "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt",
                        "yuv420p", "-c:a", "aac", "OUT",
                    ]
            )
        case .timestampJump:
            return .ffmpeg([
                "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=8", "-vf",
                "setpts='if(gte(N,50),PTS+3600/TB,PTS)'",
                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "OUT",
            ])
        case .hugePicture:
            return .ffmpeg([
                "-f", "lavfi", "-i", "color=c=gray:s=8192x8192:r=2:d=1", "-c:v", "libx264", "-preset", "ultrafast",
                "-pix_fmt", "yuv420p", "OUT",
            ])
        case .growingPicture:
            return .concatenation([
                .ffmpegStdout(
                    Self.video("160x120") + [
                        "-t", "1", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-f", "h264",
                        "pipe:1",
                    ]
                ),
                .ffmpegStdout([
                    "-f", "lavfi", "-i", "color=c=gray:s=8192x8192:r=25:d=0.04", "-c:v", "libx264", "-preset",
                    "ultrafast", "-pix_fmt", "yuv420p", "-f", "h264", "pipe:1",
                ]),
            ])
        case .manyTracks:
            return .ffmpeg(
                ["-f", "lavfi", "-i", "sine=d=0.5:sample_rate=8000"] + (0..<70).flatMap { _ in ["-map", "0:a"] } + [
                    "-c:a", "pcm_s16le", "OUT",
                ]
            )
        case .understatedDuration:
            return .derived(.videoOnly, .divideDeclaredDurations(by: 4))
        case .seedMP4, .seedMOV, .seedMKV, .seedTS:
            return .ffmpeg(
                Self.video("160x120") + Self.tone(44100) + [
                    "-t", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "12", "-c:a",
                    "aac", "OUT",
                ]
            )
        case .seedAVI:
            return .ffmpeg(
                Self.video("160x120") + Self.tone(44100) + ["-t", "2", "-c:v", "mpeg4", "-c:a", "libmp3lame", "OUT"]
            )
        case .seedMP3:
            return .ffmpeg(Self.tone(44100) + ["-t", "2", "-c:a", "libmp3lame", "OUT"])
        default:
            return headerRecipe
        }
    }

    /// 220 s of MP3 frames of 1152 samples at 44.1 kHz.
    private static let claimedFrames: UInt32 = 8422

    /// The recipes of issue 42's inputs: headers that lie, and formats found late.
    private var headerRecipe: Recipe {
        let shortMP3 = Self.tone(44100) + ["-t", "0.4", "-c:a", "libmp3lame"]
        let flac = Self.tone(44100) + ["-t", "2", "-ac", "2", "-c:a", "flac", "OUT"]
        switch self {
        case .mp3InfoOverstated:
            return .patched(.ffmpeg(shortMP3 + ["-b:a", "128k", "OUT"]), .xingFrames(Self.claimedFrames))
        case .mp3XingOverstated:
            return .patched(.ffmpeg(shortMP3 + ["-q:a", "4", "OUT"]), .xingFrames(Self.claimedFrames))
        case .mp3VBRIOverstated:
            return .patched(.ffmpeg(shortMP3 + ["-b:a", "128k", "OUT"]), .vbriFrames(Self.claimedFrames))
        case .mp3APETagged:
            return .patched(
                .ffmpeg(shortMP3 + ["-b:a", "128k", "-write_xing", "0", "-id3v2_version", "0", "OUT"]),
                .apeTag(coverBytes: 3_500_000)
            )
        case .flacTotalOverstated:
            return .patched(.ffmpeg(flac), .flacTotalSamples(220 * 44100))
        case .flacTruncated:
            return .patched(.ffmpeg(flac), .truncate(fraction: 0.5))
        case .flacVariableBlocks:
            // Consecutive pieces of one tone, each encoded with its own block size.
            let pieces = [(0.0, 0.5, 1152), (0.5, 1.2, 4608), (1.2, 2.0, 576)]
            return .variableBlockFLAC(
                pieces.map { start, end, block in
                    .ffmpeg(
                        Self.tone(44100) + [
                            "-t", "2", "-ac", "2", "-af", "atrim=start=\(start):end=\(end),asetpts=N/SR/TB",
                            "-c:a", "flac", "-frame_size", "\(block)", "OUT",
                        ]
                    )
                }
            )
        case .opusGranuleOverstated:
            return .patched(
                .ffmpeg(Self.tone(48000) + ["-t", "2", "-c:a", "libopus", "OUT"]),
                .lastGranuleLater(by: 10 * 48000)
            )
        case .vorbisGranuleOverstated:
            return .patched(
                .ffmpeg(Self.tone(44100) + ["-t", "2", "-c:a", "libvorbis", "OUT"]),
                .lastGranuleLater(by: 10 * 44100)
            )
        case .dsf, .dff:
            return .dsd(fileExtension, seconds: 1)
        case .stereoWAV:
            return .ffmpeg(Self.tone(44100) + ["-t", "2", "-ac", "2", "-c:a", "pcm_s16le", "OUT"])
        case .musepackSV8:
            return .tool("mpcenc", .stereoWAV, ["--silent", "--overwrite", "IN", "OUT"])
        default:
            preconditionFailure("\(self) has no recipe")
        }
    }
}

/// Generates each fixture once (per recipe) and shares it between tests and test processes.
public actor Fixtures {
    public static let shared = Fixtures()

    private var pending: [Fixture: Task<String, any Error>] = [:]

    /// The directory fixtures are cached in (survives test runs; a changed recipe gets a new file).
    public static let directory = NSTemporaryDirectory() + "jobctl-test-fixtures"

    /// The path of `fixture`, generating it first if needed.
    public func path(_ fixture: Fixture) async throws -> String {
        if let task = pending[fixture] { return try await task.value }
        let task = Task { try await Fixtures.generate(fixture) }
        pending[fixture] = task
        return try await task.value
    }

    private static func generate(_ fixture: Fixture) async throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let recipe = fixture.recipe
        let path = "\(directory)/\(fixture.rawValue)-\(fingerprint(of: "\(recipe)")).\(fixture.fileExtension)"
        if FileManager.default.fileExists(atPath: path) { return path }
        let partial = "\(directory)/.\(fixture.rawValue)-\(UUID().uuidString).\(fixture.fileExtension)"
        try await make(recipe, at: partial)
        _ = rename(partial, path)
        return path
    }

    private static func make(_ recipe: Fixture.Recipe, at partial: String) async throws {
        switch recipe {
        case .ffmpeg(let arguments):
            try await ProcessRunner.check(
                "ffmpeg",
                ["-nostdin", "-v", "error", "-y"] + arguments.map { $0 == "OUT" ? partial : $0 }
            )
        case .ffmpegFrom(let source, let arguments):
            let input = try await shared.path(source)
            try await ProcessRunner.check(
                "ffmpeg",
                ["-nostdin", "-v", "error", "-y"] + arguments.map { $0 == "OUT" ? partial : $0 == "IN" ? input : $0 }
            )
        case .ffmpegStdout(let arguments):
            let result = try await ProcessRunner.check("ffmpeg", ["-nostdin", "-v", "error", "-y"] + arguments)
            try result.stdout.write(to: URL(fileURLWithPath: partial))
        case .concatenation(let parts):
            var data = Data()
            for (index, part) in parts.enumerated() {
                let piece = partial + ".part\(index)"
                try await make(part, at: piece)
                data.append(try Data(contentsOf: URL(fileURLWithPath: piece)))
                try? FileManager.default.removeItem(atPath: piece)
            }
            try data.write(to: URL(fileURLWithPath: partial))
        case .text(let text):
            try Data(text.utf8).write(to: URL(fileURLWithPath: partial))
        case .data(let data):
            try data.write(to: URL(fileURLWithPath: partial))
        case .playlist(let target, _):
            let segment = try await shared.path(target)
            let text =
                "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\n/etc/passwd\n#EXTINF:4.0,\nfile://\(segment)\n#EXT-X-ENDLIST\n"
            try Data(text.utf8).write(to: URL(fileURLWithPath: partial))
        case .derived(let source, let transform):
            var data = try Data(contentsOf: URL(fileURLWithPath: try await shared.path(source)))
            apply(transform, to: &data)
            try data.write(to: URL(fileURLWithPath: partial))
        case .patched(let recipe, let transform):
            try await make(recipe, at: partial)
            var data = try Data(contentsOf: URL(fileURLWithPath: partial))
            apply(transform, to: &data)
            try data.write(to: URL(fileURLWithPath: partial))
        case .tool(let tool, let source, let arguments):
            let input = try await shared.path(source)
            try await ProcessRunner.check(tool, arguments.map { $0 == "OUT" ? partial : $0 == "IN" ? input : $0 })
        case .variableBlockFLAC(let parts):
            var files: [Data] = []
            for (index, part) in parts.enumerated() {
                let piece = partial + ".part\(index).flac"
                try await make(part, at: piece)
                files.append(try Data(contentsOf: URL(fileURLWithPath: piece)))
                try? FileManager.default.removeItem(atPath: piece)
            }
            try LyingHeaders.variableBlockFLAC(files).write(to: URL(fileURLWithPath: partial))
        case .dsd(let format, let seconds):
            let data = format == "dff" ? DSDFiles.dff(seconds: seconds) : DSDFiles.dsf(seconds: seconds)
            try data.write(to: URL(fileURLWithPath: partial))
        }
    }

    private static func apply(_ transform: Fixture.Transform, to data: inout Data) {
        switch transform {
        case .truncate(let fraction):
            data = data.prefix(Int(Double(data.count) * fraction))
        case .rotate(let degrees):
            // The first track header (the video track): its matrix, as phones write it.
            guard let tkhd = data.range(of: Data("tkhd".utf8)) else { return }
            let version = data[tkhd.upperBound]
            let matrixOffset = tkhd.upperBound + (version == 1 ? 52 : 40)
            let (a, b, c, d): (Int32, Int32, Int32, Int32) =
                switch degrees {
                case 90: (0, 0x10000, -0x10000, 0)
                case 180: (-0x10000, 0, 0, -0x10000)
                // 180° with b a hair below zero: atan2 lands on the other side of ±180.
                case -180: (-0x10000, -1, 1, -0x10000)
                case 270: (0, -0x10000, 0x10000, 0)
                default: (0x10000, 0, 0, 0x10000)
                }
            let matrix: [Int32] = [a, b, 0, c, d, 0, 0, 0, 0x4000_0000]
            for (position, value) in matrix.enumerated() {
                withUnsafeBytes(of: value.bigEndian) {
                    data.replaceSubrange(matrixOffset + position * 4..<matrixOffset + position * 4 + 4, with: $0)
                }
            }
        case .overwrite(let from, let to):
            var generator = Noise(seed: 42)
            for index in Int(Double(data.count) * from)..<Int(Double(data.count) * to) {
                data[index] = generator.next()
            }
        case .divideDeclaredDurations(let divisor):
            // (box, offset of the duration after the box type) for version-0 boxes.
            for (box, offset) in [("mvhd", 20), ("tkhd", 24), ("mdhd", 20)] {
                var from = data.startIndex
                while let found = data.range(of: Data(box.utf8), in: from..<data.endIndex) {
                    from = found.upperBound
                    let at = found.lowerBound + offset
                    guard data[found.upperBound] == 0, at + 4 <= data.count else { continue }
                    let value = data[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } / divisor
                    withUnsafeBytes(of: value.bigEndian) { data.replaceSubrange(at..<at + 4, with: $0) }
                }
            }
        case .indeterminateDeclaredDurations:
            for (box, offset) in [("mvhd", 20), ("tkhd", 24), ("mdhd", 20), ("mehd", 8)] {
                var from = data.startIndex
                while let found = data.range(of: Data(box.utf8), in: from..<data.endIndex) {
                    from = found.upperBound
                    let at = found.lowerBound + offset
                    guard data[found.upperBound] == 0, at + 4 <= data.count else { continue }
                    data.replaceSubrange(at..<at + 4, with: [0xFF, 0xFF, 0xFF, 0xFF])
                }
            }
        case .xingFrames(let frames):
            LyingHeaders.setXingFrames(&data, to: frames)
        case .vbriFrames(let frames):
            LyingHeaders.replaceXingByVBRI(&data, frames: frames)
        case .apeTag(let coverBytes):
            LyingHeaders.appendAPETag(&data, coverBytes: coverBytes)
        case .flacTotalSamples(let total):
            LyingHeaders.setFLACTotalSamples(&data, to: total)
        case .lastGranuleLater(let samples):
            LyingHeaders.extendLastGranule(&data, by: samples)
        case .noiseInMediaData:
            guard let mdat = data.range(of: Data("mdat".utf8)) else { return }
            let size = data[mdat.lowerBound - 4..<mdat.lowerBound].reduce(0) { $0 << 8 | Int($1) }
            var generator = Noise(seed: 7)
            for index in mdat.upperBound..<min(data.count, mdat.lowerBound - 4 + size) {
                data[index] = generator.next()
            }
        }
    }

    /// FNV-1a of the recipe, so a changed recipe never reuses a stale file.
    private static func fingerprint(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 36)
    }

    /// A deterministic byte generator (xorshift).
    private struct Noise {
        var state: UInt64
        init(seed: UInt64) { state = seed | 1 }
        mutating func next() -> UInt8 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }
}
