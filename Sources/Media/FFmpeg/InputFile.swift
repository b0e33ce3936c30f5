import CFFmpeg
import Foundation
import JobctlCore

/// An opened input (`AVFormatContext` for demuxing).
///
/// Opened with a protocol whitelist and a demuxer whitelist (docs/spec.md §7): a media file is hostile
/// input, and playlist-style demuxers (concat, image sequences) could make FFmpeg read other
/// local files. HLS is read with every open confined by an `InputGuard`; a local DASH manifest
/// only after `LocalManifest` checked it. Blocking I/O is aborted through the guard's `interrupt`.
final class InputFile {
    /// Protocols FFmpeg may use to read an input (docs/spec.md §7).
    static let protocolWhitelist = "file,http,https,tcp,tls"
    /// Demuxers we accept: containers of real-world media files and elementary streams.
    static let demuxerWhitelist = [
        "mov", "matroska", "webm", "mpegts", "avi", "flv", "mp3", "wav", "w64", "flac", "ogg",
        "aac", "ac3", "eac3", "mpeg", "mpegvideo", "mxf", "asf", "aiff", "caf", "m4v", "h264",
        "hevc", "yuv4mpegpipe", "dv", "amr", "wv", "ape", "tta", "au", "nut", "dts", "truehd",
        "ivf", "gxf", "rm", "3gp", "mp4", "m4a",
        // Audio the CLI reads: DSD (DSF; DSDIFF through `iff`), Musepack SV7 and SV8, TAK.
        "dsf", "iff", "mpc", "mpc8", "tak",
        // Single still pictures (never `image2`, which reads numbered sequences of files).
        "png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe",
        // What a playlist names is opened only through the input's `InputGuard`.
        "hls",
    ].joined(separator: ",")
    /// For a checked local DASH manifest only (FFmpeg's DASH reader opens what it names itself).
    static let dashWhitelist = demuxerWhitelist + ",dash"

    /// How FFmpeg reads `http(s)` inputs: like the webhook sender, redirects are not followed
    /// (the address guard checked the URL's own host) and proxies from the environment are
    /// ignored; TLS certificates are verified against the system's trust store; a dropped
    /// connection is resumed with a Range request; 30 s without a byte is a failure.
    static let httpOptions: [(String, String)] = [
        ("max_redirects", "0"),
        ("http_proxy", ""),
        ("tls_verify", "1"),
        ("reconnect", "1"),
        ("reconnect_on_network_error", "1"),
        ("reconnect_delay_max", "4"),
        ("rw_timeout", "30000000"),
        ("multiple_requests", "1"),
        ("user_agent", "jobctl/1"),
    ]

    let context: UnsafeMutablePointer<AVFormatContext>
    /// Kept alive for `io_open`'s and the interrupt callback's opaque pointer: what the input
    /// may open, and whether its reading is to stop.
    let guarding: InputGuard
    /// A checked DASH manifest's bytes, read by FFmpeg instead of the file.
    private let memory: MemoryInput?

    /// The demuxer a file's extension names, for a second try when probing guessed a format
    /// that is refused (a player looks for the MP3 sync after junk; FFmpeg's probe calls 100 kB
    /// of junk before an MP3 "AMR-NB").
    static func demuxer(forExtension ext: String) -> String? {
        let names = [
            "mp3": "mp3", "aac": "aac", "ac3": "ac3", "eac3": "eac3", "ec3": "eac3", "flac": "flac", "wav": "wav",
            "m4a": "mov", "mp4": "mov", "mov": "mov", "m4v": "mov", "3gp": "mov", "mkv": "matroska",
            "mka": "matroska", "webm": "matroska", "ts": "mpegts", "m2ts": "mpegts", "ogg": "ogg", "opus": "ogg",
            "oga": "ogg", "avi": "avi", "flv": "flv", "jpg": "jpeg_pipe", "jpeg": "jpeg_pipe", "png": "png_pipe",
            "webp": "webp_pipe", "bmp": "bmp_pipe", "dsf": "dsf", "dff": "iff", "tak": "tak",
        ]
        return names[ext.lowercased()]
    }

    /// - Parameters:
    ///   - format: a demuxer to use instead of probing (one of the whitelist).
    ///   - dashManifest: the checked bytes of the local DASH manifest at `url` (`LocalManifest`).
    init(
        url: String,
        limits: ResourceLimits,
        guarding: InputGuard,
        format: String? = nil,
        dashManifest: Data? = nil
    ) throws {
        guard let allocated = avformat_alloc_context() else { fatalError("avformat_alloc_context: out of memory") }
        self.guarding = guarding
        guarding.install(on: allocated)
        memory = dashManifest.map { MemoryInput($0, narrowingTo: Self.demuxerWhitelist) }
        memory?.attach(to: allocated)
        // Aborted when cancelled, and when something the input names failed (a playlist
        // reader would otherwise go on to the next segment, or wait for a live one).
        allocated.pointee.interrupt_callback = AVIOInterruptCB(
            callback: { opaque in
                guard let opaque else { return 0 }
                let guarding = Unmanaged<InputGuard>.fromOpaque(opaque).takeUnretainedValue()
                return guarding.interrupt.isSet || guarding.failed ? 1 : 0
            },
            opaque: Unmanaged.passUnretained(guarding).toOpaque()
        )
        var options: OpaquePointer? = nil
        // A checked DASH manifest names local files only: FFmpeg may open nothing else for it.
        av_dict_set(&options, "protocol_whitelist", memory == nil ? Self.protocolWhitelist : "file", 0)
        av_dict_set(&options, "format_whitelist", memory == nil ? Self.demuxerWhitelist : Self.dashWhitelist, 0)
        // A file declaring thousands of streams fails here, before each costs memory.
        av_dict_set(&options, "max_streams", "\(limits.maxTracks)", 0)
        if MediaLocation.isHTTP(url) {
            for (key, value) in Self.httpOptions { av_dict_set(&options, key, value, 0) }
        }
        // HLS reuses a connection for the next segment without asking `io_open`: never. And
        // it skips a segment whose extension it does not like before asking: the guard decides.
        av_dict_set(&options, "http_persistent", "0", 0)
        // A live playlist is read from its first segment (not three from the end), and one
        // that stops growing ends after three reloads, not a thousand.
        av_dict_set(&options, "live_start_index", "0", 0)
        av_dict_set(&options, "m3u8_hold_counters", "3", 0)
        av_dict_set(&options, "max_reload", "3", 0)
        if memory == nil {
            av_dict_set(&options, "allowed_extensions", "ALL", 0)
            av_dict_set(&options, "allowed_segment_extensions", "ALL", 0)
        }
        defer { av_dict_free(&options) }

        var opened: UnsafeMutablePointer<AVFormatContext>? = allocated
        // On failure avformat_open_input frees the context.
        let forced = (memory == nil ? format : "dash").flatMap { av_find_input_format($0) }
        try check(avformat_open_input(&opened, url, forced, &options), "avformat_open_input")
        guard let opened else { throw FFError(code: AVErr.invalidData, operation: "avformat_open_input") }
        context = opened
        // Every stored property is set: from here a throw runs `deinit`, which closes the
        // context (closing it here too freed it twice, a crash on a damaged file).
        // Probing decodes a few frames: none larger than the limit (the size still comes from
        // the stream's headers, and the export refuses it with limit_exceeded).
        let count = Int(opened.pointee.nb_streams)
        let perStream = UnsafeMutablePointer<OpaquePointer?>.allocate(capacity: max(1, count))
        perStream.initialize(repeating: nil, count: max(1, count))
        defer {
            for index in 0..<max(1, count) { av_dict_free(&perStream[index]) }
            perStream.deallocate()
        }
        for index in 0..<count { av_dict_set(&perStream[index], "max_pixels", "\(limits.maxPixels)", 0) }
        try check(avformat_find_stream_info(context, count > 0 ? perStream : nil), "avformat_find_stream_info")
    }

    /// FFmpeg's guess of a local file's format from its first bytes (for messages).
    static func probeFormatName(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var bytes = [UInt8](handle.readData(ofLength: 4096))
        bytes.append(contentsOf: [UInt8](repeating: 0, count: Int(AVPROBE_PADDING_SIZE)))
        return bytes.withUnsafeMutableBufferPointer { buffer in
            path.withCString { name in
                var probe = AVProbeData(
                    filename: name,
                    buf: buffer.baseAddress,
                    buf_size: Int32(buffer.count) - AVPROBE_PADDING_SIZE,
                    mime_type: nil
                )
                return av_probe_input_format(&probe, 1).map { String(cString: $0.pointee.name) }
            }
        }
    }

    deinit {
        var closing: UnsafeMutablePointer<AVFormatContext>? = context
        avformat_close_input(&closing)
    }

    var formatName: String { String(cString: context.pointee.iformat.pointee.name) }
    var formatLongName: String? { context.pointee.iformat.pointee.long_name.map { String(cString: $0) } }
    var streamCount: Int { Int(context.pointee.nb_streams) }

    func stream(_ index: Int) -> UnsafeMutablePointer<AVStream> {
        context.pointee.streams[index]!
    }

    /// Reads the next packet into `packet` (which must be blank). Returns FFmpeg's code.
    /// A named file refused or failed (`refusal`) ends the reading: a playlist would skip it.
    func read(into packet: UnsafeMutablePointer<AVPacket>) -> Int32 {
        let result = av_read_frame(context, packet)
        guard !guarding.failed else {
            if result >= 0 { av_packet_unref(packet) }
            return AVErr.permission
        }
        // How far a DASH manifest's media has reached (its reader's skips are judged by it);
        // a DASH input is always a checked manifest read from memory.
        if memory != nil, result >= 0 {
            let time = packet.pointee.pts != noPTS ? packet.pointee.pts : packet.pointee.dts
            if time != noPTS, let stream = context.pointee.streams[Int(packet.pointee.stream_index)] {
                guarding.noteRead(av_rescale_q(time, stream.pointee.time_base, microsecondBase))
            }
        }
        return result
    }

    /// Whether the index of one of `streams` (an MP4's sample table, a FLAC's seek table: what
    /// the container says is where) names bytes past the end of the file: it was cut.
    func indexReachesPastEnd(streams: [Int]) -> Bool {
        guard let pb = context.pointee.pb else { return false }
        let size = avio_size(pb)
        guard size > 0 else { return false }
        return streams.contains { index in
            let count = avformat_index_get_entries_count(stream(index))
            guard count > 0, let last = avformat_index_get_entry(stream(index), count - 1) else { return false }
            return last.pointee.pos + Int64(last.pointee.size) > size
        }
    }

    /// `input_unsupported` naming what the input tried to open outside its scope, if anything.
    var refusal: MediaError? {
        let duration = context.pointee.duration
        return guarding.failure(format: formatName, duration: duration > 0 && duration != noPTS ? duration : nil)
    }

    /// Formats that are a plain sequence of packets from byte 0 (no header, no index), where a
    /// timestamp seek to the start can land past the first keyframe (docs/ffmpeg.md #25).
    private static let headerlessFormats: Set<String> = [
        "mpegts", "mpeg", "mpegvideo", "h264", "hevc", "m4v", "aac", "mp3", "ac3", "eac3", "dts",
    ]

    var isHeaderless: Bool { Self.headerlessFormats.contains(formatName) }

    /// Seeks so that the next packets start at or before `timestamp` (µs, absolute).
    func seek(toMicroseconds timestamp: Int64) throws {
        try check(avformat_seek_file(context, -1, Int64.min, timestamp, timestamp, 0), "avformat_seek_file")
    }

    /// Seeks back to the first byte (headerless formats), or to the first timestamp.
    func seekToBeginning(startTime: Int64) throws {
        if isHeaderless && context.pointee.pb != nil {
            try check(avformat_seek_file(context, -1, 0, 0, 0, AVSEEK_FLAG_BYTE), "avformat_seek_file(byte 0)")
        } else {
            // Aiming a second before the start (never after it) reaches the packets before the
            // start time, such as an MP4's AAC priming packet before its edit list's 0: a seek
            // to the start itself lands on the packet at 0 and drops them, and a decoder started
            // there differs from a full decode for the rest of the track (AAC noise state).
            try check(
                avformat_seek_file(context, -1, Int64.min, startTime - 1_000_000, startTime, 0),
                "avformat_seek_file(start)"
            )
        }
    }
}
