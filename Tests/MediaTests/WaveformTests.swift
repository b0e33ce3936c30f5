import Foundation
import MediaTestKit
import Testing

@testable import Media

/// Waveform peaks against an independent computation: ffmpeg decodes the track to 16-bit PCM
/// (`-f s16le`, the whole file, sliced for a range) and numpy reduces it as audiowaveform does
/// (channels summed and divided toward zero, min/max per column, the last partial column kept,
/// 8 bits = 16 bits / 256 toward zero). Several tracks (the audio mix): each decoded to float,
/// converted to the common rate and channels by the ffmpeg CLI, summed by numpy.
@Suite("Waveform", .timeLimit(.minutes(5)))
struct WaveformTests {
    static let oracle = """
        import json, subprocess, sys
        import numpy as np
        path, spp, split, bits, start, duration, track = sys.argv[1], int(sys.argv[2]), sys.argv[3] == '1', int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
        streams = json.loads(subprocess.check_output(['ffprobe', '-v', 'error', '-select_streams', 'a', '-show_entries', 'stream=index,channels,sample_rate', '-of', 'json', path]))['streams']
        if track != 'mix':
            streams = [s for s in streams if s['index'] == int(track)]
        channels, rate = max(s['channels'] for s in streams), max(int(s['sample_rate']) for s in streams)
        def first_packet_time(stream):
            # Where a track starts (a Matroska stream's start_time does not say); the AAC
            # priming packet before 0 counts as 0.
            first = subprocess.check_output(['ffprobe', '-v', 'error', '-select_streams', str(stream['index']), '-show_entries', 'packet=pts_time', '-read_intervals', '%+#1', '-of', 'csv=p=0', path]).split()
            return max(0.0, float(first[0].strip(b','))) if first else 0.0
        def pcm(stream, fmt, dtype, offset=0.0):
            # The track's samples from `start` (its own timeline begins at `offset`).
            native, own = stream['channels'], int(stream['sample_rate'])
            samples = np.frombuffer(subprocess.check_output(['ffmpeg', '-nostdin', '-v', 'error', '-i', path, '-map', '0:%d' % stream['index'], '-f', fmt, '-']), dtype).reshape(-1, native)
            if duration > 0:
                first = max(0, round((start - offset) * own))
                samples = samples[first:first + round((duration - max(0.0, offset - start)) * own)]
            return samples
        def converted(stream):
            # Trimmed at the track's own rate, then converted (as the reader does): ffmpeg's
            # default resampler and channel matrix.
            samples = pcm(stream, 'f32le', np.float32, first_packet_time(stream))
            if int(stream['sample_rate']) == rate and stream['channels'] == channels:
                return samples
            out = subprocess.run(['ffmpeg', '-nostdin', '-v', 'error', '-f', 'f32le', '-ar', stream['sample_rate'], '-ac', str(stream['channels']), '-i', '-', '-ar', str(rate), '-ac', str(channels), '-f', 'f32le', '-'], input=samples.tobytes(), stdout=subprocess.PIPE, check=True).stdout
            return np.frombuffer(out, np.float32).reshape(-1, channels)
        if len(streams) == 1:
            signal = pcm(streams[0], 's16le', np.int16).astype(np.int64)
        else:
            # The mix: each track as float, summed in order, then 16 bits as swresample makes
            # them (lrintf(x * 32768), clipped).
            # A track that starts later than the range is preceded by silence.
            tracks = [np.concatenate([np.zeros((round(max(0.0, first_packet_time(s) - start) * rate), channels), np.float32), converted(s)]) for s in streams]
            total = np.zeros((max(len(t) for t in tracks), channels), np.float32)
            for t in tracks:
                total[:len(t)] += t
            signal = np.clip(np.rint(total * np.float32(32768)), -32768, 32767).astype(np.int64)
        signal = signal if split else np.fix(signal.sum(axis=1) / channels).astype(np.int64)[:, None]
        points = []
        for column in range(0, len(signal), spp):
            chunk = signal[column:column + spp]
            for channel in range(signal.shape[1]):
                points += [int(chunk[:, channel].min()), int(chunk[:, channel].max())]
        if bits == 8:
            points = [int(np.fix(value / 256)) for value in points]
        print(json.dumps({'channels': signal.shape[1], 'sample_rate': rate, 'data': points}))
        """

    struct Expected: Decodable {
        var channels: Int
        var sample_rate: Int
        var data: [Int]
    }

    struct Case: Sendable, CustomStringConvertible {
        var fixture: Fixture
        var split = false
        var bits = 16
        var range: (start: Double, duration: Double)?
        var pixelsPerSecond: Int?
        var track: Int?
        /// How far a value may be from the oracle's (0: bit-exact).
        var tolerance = 0
        var description: String {
            "\(fixture)\(split ? " split" : "") \(bits)-bit\(range.map { " \($0.start)s+\($0.duration)s" } ?? "")"
                + (pixelsPerSecond.map { " \($0) px/s" } ?? "") + (track.map { " track \($0)" } ?? "")
        }
    }

    static let cases = [
        Case(fixture: .basic),  // AAC stereo 48 kHz
        Case(fixture: .basic, bits: 8),
        Case(fixture: .basic, split: true),
        Case(fixture: .basic, pixelsPerSecond: 20),
        Case(fixture: .surround),  // AAC 5.1
        Case(fixture: .surround, split: true, bits: 8),
        Case(fixture: .odd444),  // AAC mono 22.05 kHz
        Case(fixture: .audioOnly),  // FLAC stereo 44.1 kHz
        Case(fixture: .audioOnly, range: (1.01, 2)),
        Case(fixture: .audioOnly, split: true, bits: 8, range: (0.5, 1.2345)),
        // Decoding from the file's first packet (the priming one before 0), as a full decode does.
        Case(fixture: .basic, split: true, range: (0.1, 2)),
        // After a real seek: AAC without noise substitution decodes the same from any packet.
        Case(fixture: .aacPlain, split: true, range: (1.01, 2)),
        Case(fixture: .aacPlain, bits: 8, range: (2.5, 1.2345)),
        Case(fixture: .impulses),  // PCM: clicks at full scale
        // Two tracks (AAC stereo 48 kHz, AAC mono 44.1 kHz) mixed at 48 kHz stereo, or one of them.
        Case(fixture: .multiAudio),
        Case(fixture: .multiAudio, split: true, bits: 8),
        // A range of a resampled track: the reader trims at 44.1 kHz, then resamples; the oracle
        // resamples the same slice with the ffmpeg CLI, which feeds swresample in other chunk
        // sizes, and the float results differ in the last bit: ±1 on about 3 % of values.
        Case(fixture: .multiAudio, split: true, range: (0.15, 2), tolerance: 1),
        Case(fixture: .multiAudio, track: 2),
        // A second track starting 35 s in: mixed without waiting for it (or buffering 35 s).
        Case(fixture: .lateSecondTrack, split: true),
        // A second track that ends 37 s before the first: mixed as silence from there.
        Case(fixture: .shortSecondTrack),
        // Formats found late (DSD at 352.8 kHz, Musepack), and headers that claim more than the
        // media holds: the peaks of what it holds (issue 42).
        Case(fixture: .dsf),
        Case(fixture: .dff, split: true),
        Case(fixture: .musepackSV8),
        Case(fixture: .mp3VBRIOverstated),
        Case(fixture: .flacTotalOverstated, split: true),
        Case(fixture: .flacVariableBlocks),
        Case(fixture: .opusGranuleOverstated),
    ]

    @Test(arguments: cases)
    func peaksAreBitExact(test: Case) async throws {
        let path = try await Fixtures.shared.path(test.fixture)
        var options = WaveformOptions()
        options.splitChannels = test.split
        options.bits = test.bits
        options.pixelsPerSecond = test.pixelsPerSecond
        options.track = test.track
        let range = test.range.map { TimeRange(start: Int64($0.start * 1e6), duration: Int64($0.duration * 1e6)) }
        let reader = try WaveformReader(asset: try Asset(location: path), options: options, timeRange: range ?? .all)
        let data = try reader.readPeaks()
        let samplesPerPixel = options.samplesPerPixel(sampleRate: data.sampleRate)
        let output = try await ProcessRunner.check(
            "python3",
            [
                "-c", Self.oracle, path, "\(samplesPerPixel)", test.split ? "1" : "0", "\(test.bits)",
                "\(test.range?.start ?? 0)", "\(test.range?.duration ?? 0)", test.track.map { "\($0)" } ?? "mix",
            ]
        )
        let expected = try JSONDecoder().decode(Expected.self, from: output.stdout)
        #expect(data.channels == expected.channels)
        #expect(data.sampleRate == expected.sample_rate)
        #expect(data.samplesPerPixel == samplesPerPixel)
        let ours = data.values(bits: test.bits)
        #expect(ours.count == expected.data.count, "\(test): \(ours.count) values, expected \(expected.data.count)")
        let differing = zip(ours, expected.data).enumerated().filter {
            abs($0.element.0 - $0.element.1) > test.tolerance
        }
        #expect(differing.isEmpty, "\(test): \(differing.count) values differ, first \(differing.prefix(3))")
    }

    /// The JSON and `.dat` files, field by field and byte by byte.
    @Test func fileFormats() throws {
        let mono = WaveformData(sampleRate: 44100, samplesPerPixel: 256, channels: 1, data: [-300, 512, -32768, 32767])
        let json = try JSONSerialization.jsonObject(with: Data(mono.json(bits: 16))) as? [String: Any]
        #expect(json?["version"] as? Int == 2)
        #expect(json?["channels"] as? Int == 1)
        #expect(json?["sample_rate"] as? Int == 44100)
        #expect(json?["samples_per_pixel"] as? Int == 256)
        #expect(json?["bits"] as? Int == 16)
        #expect(json?["length"] as? Int == 2)
        #expect(json?["data"] as? [Int] == [-300, 512, -32768, 32767])
        let eight = try JSONSerialization.jsonObject(with: Data(mono.json(bits: 8))) as? [String: Any]
        #expect(eight?["data"] as? [Int] == [-1, 2, -128, 127])

        #expect(
            mono.dat(bits: 16) == [
                1, 0, 0, 0, 0, 0, 0, 0, 0x44, 0xAC, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0,
                0xD4, 0xFE, 0x00, 0x02, 0x00, 0x80, 0xFF, 0x7F,
            ]
        )
        #expect(
            mono.dat(bits: 8) == [
                1, 0, 0, 0, 1, 0, 0, 0, 0x44, 0xAC, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0xFF, 2, 0x80, 0x7F,
            ]
        )
        let stereo = WaveformData(sampleRate: 48000, samplesPerPixel: 512, channels: 2, data: [-1, 1, -2, 2])
        #expect(
            stereo.dat(bits: 16) == [
                2, 0, 0, 0, 0, 0, 0, 0, 0x80, 0xBB, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0,
                0xFF, 0xFF, 1, 0, 0xFE, 0xFF, 2, 0,
            ]
        )
    }

    /// The PNG is a picture of the given size that ffprobe reads.
    @Test func pngRendering() async throws {
        let path = try await Fixtures.shared.path(.impulses)
        try await withTemporaryDirectory("waveform") { directory in
            let outputs = WaveformOutputs(
                json: directory.file("a.json"),
                dat: directory.file("a.dat"),
                png: directory.file("w.png")
            )
            var options = WaveformOptions()
            options.png = WaveformPicture()
            options.png?.width = 300
            options.png?.height = 100
            let reader = try WaveformReader(asset: try Asset(location: path), options: options, timeRange: .all)
            let result = try reader.run(writing: outputs)
            #expect(result.files.map(\.name).sorted() == ["a.dat", "a.json", "w.png"])
            let picture = try #require(try await FFProbe.probe(directory.file("w.png")).video)
            #expect(picture.codec_name == "png" && picture.width == 300 && picture.height == 100)
            #expect(try await FFProbe.decodeErrors(directory.file("w.png")).isEmpty)
        }
    }

    @Test func noAudioIsInputUnsupported() async throws {
        let path = try await Fixtures.shared.path(.videoOnly)
        do {
            _ = try WaveformReader(asset: try Asset(location: path), options: WaveformOptions(), timeRange: .all)
            Issue.record("a video-only input was accepted")
        } catch {
            #expect(error.code == .inputUnsupported)
            #expect(error.message.contains("no audio track"))
        }
    }
}

extension WaveformTests {
    /// `--track` naming a video track is refused, with the audio tracks listed.
    @Test func trackMustBeAudio() async throws {
        let path = try await Fixtures.shared.path(.multiAudio)
        var options = WaveformOptions()
        options.track = 0
        do {
            _ = try WaveformReader(asset: try Asset(location: path), options: options, timeRange: .all)
            Issue.record("a video track was accepted")
        } catch {
            #expect(error.code == .inputUnsupported)
            #expect(error.message.contains("audio tracks: 1, 2"), "\(error.message)")
        }
    }
}

extension WaveformTests {
    /// Cancelled before it started reading (a job cancelled while it was being set up): the
    /// read throws the cancellation instead of trapping.
    @Test func cancelledBeforeReadingThrows() async throws {
        let path = try await Fixtures.shared.path(.basic)
        let reader = try WaveformReader(asset: try Asset(location: path), options: WaveformOptions(), timeRange: .all)
        reader.cancel()
        do {
            _ = try reader.readPeaks()
            Issue.record("a cancelled reader read")
        } catch {
            #expect(error.isCancellation, "\(error)")
        }
    }
}

extension WaveformTests {
    /// The float → 16-bit conversion matches `lrintf(x * 32768)` clipped (swresample's), ties to
    /// even, out-of-range and NaN included.
    @Test func sixteenBitMatchesLrintf() {
        let values: [Float] = [
            0, 0.5 / 32768, 1.5 / 32768, -0.5 / 32768, -2.5 / 32768, 1, -1, 2, -2, 0.99999, 1e10, .nan, .infinity,
            -.infinity,
        ]
        for value in values {
            // lrintf's "cannot represent" result on x86-64 is the most negative long.
            let scaled = value * 32768
            let rounded = scaled.isFinite && scaled.magnitude < 0x1p63 ? lrintf(scaled) : Int.min
            let expected = Int32(min(max(rounded, -32768), 32767))
            #expect(PeakAccumulator.sixteenBit(value) == expected, "\(value)")
        }
    }
}
