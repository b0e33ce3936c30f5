import CFFmpeg
import Foundation
import JobctlCore
import Synchronization

/// How to reduce audio to peaks: the options of `jobctl waveform` and of a `waveform` job.
public struct WaveformOptions: Sendable, Hashable, Codable {
    /// Input samples per point (default 256, the audiowaveform default); at least 2.
    public var samplesPerPixel: Int?
    /// Points per second instead (samples per point = sample rate / this, rounded down).
    public var pixelsPerSecond: Int?
    /// 8 or 16.
    public var bits = 16
    /// One min/max pair per channel per point instead of the channels averaged.
    public var splitChannels = false
    /// The audio track to read (its index in the file); `nil`: every audio track, mixed.
    public var track: Int?
    /// Which files to write (at least one): JSON (`peaks.json`), binary (`peaks.dat`), PNG.
    public var json = true
    public var dat = false
    public var png: WaveformPicture?

    public init() {}

    public static let defaultSamplesPerPixel = 256
    /// The most values a waveform may hold (64 MB of 16-bit values; a JSON file of ~200 MB):
    /// 2 samples per pixel over hours of audio would otherwise grow without bound.
    public static let maximumValues = 1 << 25
    /// audiowaveform's limit.
    public static let maximumChannels = 24

    /// The most samples per point: 2^24, a 1000-point overview of 97 hours at 48 kHz (and
    /// within the 32-bit fields of a `.dat` header).
    public static let maximumSamplesPerPixel = 1 << 24
    /// The most points per second asked for (a 192 kHz track gives at most 96,000: 2 samples each).
    public static let maximumPixelsPerSecond = 100_000

    /// Every number is bounded (`invalid_request` naming the option), at submission and again
    /// in the worker, so no stored value can make a run trap (a `.dat` header once trapped on
    /// 2^32 samples per pixel and killed every worker that claimed the job).
    public func check() throws(MediaError) {
        guard bits == 8 || bits == 16 else { throw .invalidOption("bits", "is 8 or 16") }
        if samplesPerPixel != nil && pixelsPerSecond != nil {
            throw .invalidOption("samplesPerPixel", "and pixelsPerSecond are alternatives: give one")
        }
        if let samplesPerPixel, !(2...Self.maximumSamplesPerPixel).contains(samplesPerPixel) {
            throw .invalidOption("samplesPerPixel", "is between 2 and \(Self.maximumSamplesPerPixel)")
        }
        if let pixelsPerSecond, !(1...Self.maximumPixelsPerSecond).contains(pixelsPerSecond) {
            throw .invalidOption("pixelsPerSecond", "is between 1 and \(Self.maximumPixelsPerSecond)")
        }
        if let track, !(0...65535).contains(track) { throw .invalidOption("track", "is a stream index, 0 to 65535") }
        guard json || dat || png != nil else { throw .invalidOption("files", "names at least one of json, dat, png") }
        if let png {
            if !(1...16384).contains(png.width) { throw .invalidOption("width", "is between 1 and 16384") }
            if !(1...16384).contains(png.height) { throw .invalidOption("height", "is between 1 and 16384") }
            if png.width * png.height > ImageGenerator.maximumPixels {
                throw MediaError(
                    .limitExceeded,
                    "a \(png.width)x\(png.height) picture is too large (at most \(ImageGenerator.maximumPixels / 1_000_000) megapixels)"
                )
            }
            for (field, colour) in [("color", png.color), ("background", png.background)]
            where WaveformRenderer.rgb(colour) == nil {
                throw .invalidOption(field, "is a colour as RRGGBB, e.g. 3A6EA5")
            }
        }
    }

    /// Samples per point for a track at `sampleRate` (a reader refuses fewer than 2).
    public func samplesPerPixel(sampleRate: Int) -> Int {
        if let pixelsPerSecond, pixelsPerSecond > 0 { return sampleRate / pixelsPerSecond }
        return samplesPerPixel ?? Self.defaultSamplesPerPixel
    }
}

/// The PNG rendering of a waveform.
public struct WaveformPicture: Sendable, Hashable, Codable {
    public var width = 1800
    public var height = 280
    /// `RRGGBB`.
    public var background = "FFFFFF"
    public var color = "3A6EA5"

    public init() {}
}

/// What a waveform run computed and wrote.
public struct WaveformResult: Sendable, Hashable, Codable {
    public var files: [WrittenFile]
    public var sampleRate: Int
    public var samplesPerPixel: Int
    public var channels: Int
    public var length: Int
    /// Seconds of audio read.
    public var duration: Double
}

/// Reads audio sample by sample and reduces it to min/max peaks per pixel column while
/// streaming (the seeds' audio-sample reader): an `AssetReader` delivers the audio decoded at its
/// own rate and channels, trimmed to the range to the sample; each sample becomes 16 bits;
/// `PeakAccumulator` keeps only the points.
///
/// With one audio track, that track; with several, all of them mixed
/// (`AssetReaderAudioMixOutput`) at the highest sample rate and channel count among them;
/// `options.track` picks one instead.
public final class WaveformReader: @unchecked Sendable {
    public let asset: Asset
    public let options: WaveformOptions
    public let timeRange: TimeRange
    /// The tracks read (several: mixed).
    public let tracks: [AssetTrack]
    public let sampleRate: Int
    public let channels: Int
    private let reader: AssetReader
    private let output: AssetReaderOutput
    private let expected: Int64?
    private let read = Atomic<Int64>(0)

    /// `input_unsupported` without an audio track, with more channels than 24, or when
    /// `options.track` is not a decodable audio track.
    public init(asset: Asset, options: WaveformOptions, timeRange: TimeRange) throws(MediaError) {
        try options.check()
        try asset.limits.checkDuration(of: asset, timeRange, what: "the waveform of")
        tracks = try Self.tracks(of: asset, options: options)
        for track in tracks {
            guard let rate = track.sampleRate, rate > 0, let count = track.channels, count > 0 else {
                throw MediaError(.inputUnsupported, "track \(track.index) does not say its sample rate and channels")
            }
            guard count <= WaveformOptions.maximumChannels else {
                throw MediaError(
                    .inputUnsupported,
                    "track \(track.index) has \(count) channels; waveforms support up to \(WaveformOptions.maximumChannels)"
                )
            }
        }
        sampleRate = tracks.compactMap(\.sampleRate).max()!
        channels = tracks.compactMap(\.channels).max()!
        guard options.samplesPerPixel(sampleRate: sampleRate) >= 2 else {
            throw MediaError(
                .inputUnsupported,
                "\(options.pixelsPerSecond ?? 0) pixels per second is more than half the sample rate (\(sampleRate) Hz): at least 2 samples per pixel"
            )
        }
        self.asset = asset
        self.options = options
        self.timeRange = timeRange
        expected = try? timeRange.resolved(assetDuration: asset.duration, assetName: asset.displayName)
            .expectedDuration
        if let expected {
            let samples = Double(expected) / 1e6 * Double(sampleRate)
            try Self.checkSize(
                columns: Int(samples) / options.samplesPerPixel(sampleRate: sampleRate) + 1,
                options,
                channels
            )
        }
        reader = try AssetReader(asset: asset, timeRange: timeRange)
        if tracks.count == 1 {
            output = AssetReaderTrackOutput(
                track: tracks[0],
                settings: .audio(sampleRate: sampleRate, channels: channels)
            )
        } else {
            output = AssetReaderAudioMixOutput(audioTracks: tracks, sampleRate: sampleRate, channels: channels)
        }
        reader.add(output)
    }

    /// `limit_exceeded` when `columns` points would hold more than `maximumValues` values.
    private static func checkSize(columns: Int, _ options: WaveformOptions, _ channels: Int) throws(MediaError) {
        let values = 2 * columns * (options.splitChannels ? channels : 1)
        guard values > WaveformOptions.maximumValues else { return }
        throw MediaError(
            .limitExceeded,
            "this waveform would hold \(values) values (at most \(WaveformOptions.maximumValues)): use more samples per pixel (or fewer pixels per second), a shorter --range, or no --split-channels"
        )
    }

    private static func tracks(of asset: Asset, options: WaveformOptions) throws(MediaError) -> [AssetTrack] {
        let audio = asset.audioTracks.filter(\.isDecodable)
        if let index = options.track {
            guard let track = audio.first(where: { $0.index == index }) else {
                let choices = audio.map { "\($0.index)" }.joined(separator: ", ")
                throw MediaError(
                    .inputUnsupported,
                    "track \(index) of \(asset.displayName) is not an audio track that can be decoded"
                        + (choices.isEmpty ? "" : " (audio tracks: \(choices))")
                )
            }
            if track.isEncrypted == true {
                throw MediaError(
                    .inputUnsupported,
                    "audio track \(index) of \(asset.displayName) is encrypted (DRM): jobctl cannot decrypt it"
                )
            }
            return [track]
        }
        guard !audio.isEmpty else {
            throw MediaError(.inputUnsupported, "\(asset.displayName) has no audio track to draw a waveform of")
        }
        if let encrypted = audio.first(where: { $0.isEncrypted == true }) {
            throw MediaError(
                .inputUnsupported,
                "audio track \(encrypted.index) of \(asset.displayName) is encrypted (DRM): jobctl cannot decrypt it"
            )
        }
        return audio
    }

    /// 0…1, by samples read against the range's length.
    public var progress: Double {
        guard let expected, expected > 0 else { return 0 }
        return min(1, Double(read.load(ordering: .relaxed)) / (Double(expected) / 1e6 * Double(sampleRate)))
    }

    public func cancel() { reader.cancelReading() }

    /// Reads the whole range and returns its peaks. Blocks.
    public func readPeaks() throws(MediaError) -> WaveformData {
        var peaks = PeakAccumulator(
            channels: channels,
            split: options.splitChannels,
            samplesPerPixel: options.samplesPerPixel(sampleRate: sampleRate)
        )
        try reader.startReading()
        defer {
            reader.cancelReading()
            reader.waitUntilFinished()
        }
        while let sample = try output.copyNextSample() {
            guard case .audio(let frame) = sample.payload else { continue }
            let count = Int(frame.sampleCount)
            frame.withPlanes { planes in peaks.add(planes: UnsafePointer(planes), frames: count) }
            read.add(Int64(count), ordering: .relaxed)
            // A declared duration can understate the audio: the limit holds while reading too.
            if peaks.data.count > WaveformOptions.maximumValues {
                try Self.checkSize(
                    columns: peaks.data.count / 2 / (options.splitChannels ? channels : 1),
                    options,
                    channels
                )
            }
        }
        if let error = reader.terminalError { throw error }
        peaks.finish()
        return WaveformData(
            sampleRate: sampleRate,
            samplesPerPixel: peaks.samplesPerPixel,
            channels: options.splitChannels ? channels : 1,
            data: peaks.data
        )
    }

    /// Reads the peaks and stages `peaks.json`, `peaks.dat` and `waveform.png` (those
    /// `options` asks for) into `files`; the result's `files` is empty until the caller commits.
    public func run(into files: StagedFiles) throws(MediaError) -> WaveformResult {
        if files.budget == nil { files.budget = OutputBudget(limit: asset.limits.maxOutputBytes) }
        let data = try readPeaks()
        if options.json {
            try files.write(WaveformOutputs.jsonName) { write throws(MediaError) in
                try data.writeJSON(bits: options.bits, to: write)
            }
        }
        if options.dat {
            try files.write(WaveformOutputs.datName) { write throws(MediaError) in
                try data.writeDat(bits: options.bits, to: write)
            }
        }
        if let picture = options.png {
            try files.write(WaveformOutputs.pngName, try WaveformRenderer.png(data, picture))
        }
        return result(data, files: [])
    }

    private func result(_ data: WaveformData, files: [WrittenFile]) -> WaveformResult {
        WaveformResult(
            files: files,
            sampleRate: data.sampleRate,
            samplesPerPixel: data.samplesPerPixel,
            channels: data.channels,
            length: data.length,
            duration: Double(read.load(ordering: .relaxed)) / Double(data.sampleRate)
        )
    }

    /// Reads the peaks and writes the files of `outputs` (paths), all or none.
    public func run(writing outputs: WaveformOutputs) throws(MediaError) -> WaveformResult {
        let data = try readPeaks()
        var staged: [String: StagedFiles] = [:]
        let budget = OutputBudget(limit: asset.limits.maxOutputBytes)
        func write(_ path: String, _ produce: (WaveformData.ChunkWriter) throws(MediaError) -> Void) throws(MediaError)
        {
            let directory = PathText.directory(of: path)
            if staged[directory] == nil {
                staged[directory] = try StagedFiles(directory: directory)
                staged[directory]!.budget = budget
            }
            try staged[directory]!.write((path as NSString).lastPathComponent, producing: produce)
        }
        if let path = outputs.json {
            try write(path) { chunk throws(MediaError) in try data.writeJSON(bits: options.bits, to: chunk) }
        }
        if let path = outputs.dat {
            try write(path) { chunk throws(MediaError) in try data.writeDat(bits: options.bits, to: chunk) }
        }
        if let path = outputs.png {
            let picture = try WaveformRenderer.png(data, options.png ?? WaveformPicture())
            try write(path) { chunk throws(MediaError) in try chunk(picture) }
        }
        var files: [WrittenFile] = []
        for directory in staged.keys.sorted() { files += try staged[directory]!.commit() }
        return result(data, files: files)
    }
}

/// Where a waveform's files go (paths; at least one). The PNG looks as `options.png` says
/// (the default picture without it), the same settings a job's `waveform.png` is drawn with.
public struct WaveformOutputs: Sendable, Hashable {
    public var json: String?
    public var dat: String?
    public var png: String?

    public init(json: String? = nil, dat: String? = nil, png: String? = nil) {
        self.json = json
        self.dat = dat
        self.png = png
    }

    /// The names of a waveform job's files in its output directory.
    public static let jsonName = "peaks.json"
    public static let datName = "peaks.dat"
    public static let pngName = "waveform.png"
}
