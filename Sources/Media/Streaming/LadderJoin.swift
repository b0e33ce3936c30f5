import CFFmpeg
import Foundation
import Streaming

/// The join of a ladder split across workers: the chunks' video segments moved onto one
/// timeline and staged with the sound encoded here. No picture is decoded or encoded again,
/// unless a chunk's files are gone: that chunk is encoded again here.
extension LadderSession {
    /// Makes sure every chunk's files are there, whole: every file its job listed, at the size
    /// it listed; each rendition's initialization segment and segments numbered without a gap
    /// from its first to the next chunk's. A chunk that is not is encoded again, here, into its
    /// directory.
    /// Returns the indices of the chunks encoded again.
    func completeChunks(_ chunks: [LadderChunk.Written]) throws(MediaError) -> [Int] {
        var again: [Int] = []
        for (position, joined) in chunks.enumerated() {
            let next = position + 1 < chunks.count ? chunks[position + 1].chunk.firstSegment : nil
            // Rows changed around jobctl must not trap the worker.
            if let next, next <= joined.chunk.firstSegment {
                throw MediaError(
                    .internalError,
                    "the ladder's chunks are out of order: chunk \(joined.chunk.index) starts at segment \(joined.chunk.firstSegment), the next at \(next)"
                )
            }
            let listed = joined.files.allSatisfy { name, bytes in
                let attributes = try? FileManager.default.attributesOfItem(
                    atPath: (joined.directory as NSString).appendingPathComponent(name)
                )
                return (attributes?[.size] as? NSNumber)?.int64Value == bytes
            }
            let whole =
                listed
                && plan.renditions.allSatisfy { rendition in
                    let directory = joined.directory
                    guard FileManager.default.fileExists(atPath: "\(directory)/\(rendition.name)-init.mp4") else {
                        return false
                    }
                    let numbers = Self.segmentNames(rendition.name, in: directory).map(Self.number)
                    let expected = next.map { Array(joined.chunk.firstSegment..<$0) }
                    return !numbers.isEmpty && numbers.first == joined.chunk.firstSegment
                        && numbers == Array(joined.chunk.firstSegment..<(joined.chunk.firstSegment + numbers.count))
                        && (expected == nil || numbers == expected!)
                }
            if whole { continue }
            try? FileManager.default.removeItem(atPath: joined.directory)
            // An asset is read once: the chunk reads the input again through a fresh one.
            let session = try LadderSession(
                asset: try Asset(location: asset.location, limits: asset.limits),
                options: options,
                timeRange: joined.range,
                scope: .chunk(joined.chunk)
            )
            _ = try session.run(directory: joined.directory)
            again.append(joined.chunk.index)
        }
        return again
    }

    /// Stages every video rendition's segments from the chunks (in order) into `files`, each
    /// chunk's decode times moved to where it starts on the ladder's timeline, and the
    /// initialization segment, whose codec configuration every chunk must share.
    func joinChunks(
        _ chunks: [LadderChunk.Written],
        into files: StagedFiles
    ) throws(MediaError) -> [LadderPackage.Rendition] {
        func read(_ path: String) throws(MediaError) -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw MediaError(
                    .outputUnwritable,
                    "\(path), written by a chunk of this ladder, is missing from the scratch directory"
                )
            }
            return Array(data)
        }
        var joined: [LadderPackage.Rendition] = []
        for rendition in plan.renditions {
            let initialization = "\(rendition.name)-init.mp4"
            var reference: (bytes: [UInt8], track: FragmentedMP4.Track)?
            var segments: [String] = []
            for (index, chunk) in chunks.enumerated() {
                let directory = chunk.directory
                let own = try read((directory as NSString).appendingPathComponent(initialization))
                let track: FragmentedMP4.Track
                do {
                    guard let first = try FragmentedMP4.tracks(inInitialization: own).first else {
                        throw FragmentedMP4.Problem("no track")
                    }
                    track = first
                } catch {
                    throw MediaError(.encodeFailed, "\(initialization) of chunk \(index) cannot be read: \(error)")
                }
                // The edit list may differ (the first chunk's keeps the range's lead-in); the
                // codec, its parameter sets and the timescale may not.
                if let reference, reference.track != track {
                    throw MediaError(
                        .encodeFailed,
                        "chunk \(index) of the ladder wrote \(initialization) with another codec configuration than chunk 0 (another FFmpeg or x264 on that worker, or a damaged file)"
                    )
                }
                if reference == nil { reference = (own, track) }
                let names = Self.segmentNames(rendition.name, in: directory)
                let offset = Int64((Double(chunk.chunk.offset) * Double(track.timescale) / 1e6).rounded())
                var lasted: Int64 = 0
                var longest: Int64 = 0
                for name in names {
                    let bytes = try read((directory as NSString).appendingPathComponent(name))
                    do {
                        let fragments = try FragmentedMP4.fragments(inSegment: bytes, tracks: [track])
                        lasted += fragments.reduce(Int64(0)) { $0 + Int64($1.duration) }
                        longest = max(longest, Int64(fragments.flatMap(\.samples).map(\.duration).max() ?? 0))
                        try files.write(name, try FragmentedMP4.rebased(bytes, by: offset, timescale: track.timescale))
                    } catch let error as MediaError {
                        throw error
                    } catch {
                        throw MediaError(.encodeFailed, "\(name) of chunk \(index) cannot be joined: \(error)")
                    }
                    segments.append(name)
                }
                // A chunk lasts its span, to a frame: the next one starts where it ends.
                if let end = chunk.chunk.end {
                    let span = Int64((Double(end - chunk.chunk.offset) * Double(track.timescale) / 1e6).rounded())
                    guard abs(lasted - span) <= max(longest, 1) else {
                        throw MediaError(
                            .encodeFailed,
                            "chunk \(index) of the ladder's \(rendition.name) lasts \(lasted) ticks of 1/\(track.timescale) s, its span \(span)"
                        )
                    }
                }
            }
            try files.write(initialization, reference?.bytes ?? [])
            joined.append(
                LadderPackage.Rendition(
                    name: rendition.name,
                    segments: segments,
                    frameRate: rendition.frameRate ?? plan.video?.frameRate
                )
            )
        }
        return joined
    }

    /// A join's: where the chunks' pictures end (µs from the range's start), the last chunk's
    /// start plus the length of its first rendition's segments; the sound is padded to it
    /// (decision 155). `nil` for any other scope, or a join without renditions.
    func joinedPictureEnd() throws(MediaError) -> Int64? {
        guard case .join(let chunks) = scope, let last = chunks.last, let rendition = plan.renditions.first else {
            return nil
        }
        let directory = last.directory
        do {
            let initialization = try Self.read("\(directory)/\(rendition.name)-init.mp4")
            let tracks = try FragmentedMP4.tracks(inInitialization: initialization)
            guard let track = tracks.first, track.timescale > 0 else { throw FragmentedMP4.Problem("no track") }
            var ticks: UInt64 = 0
            for name in Self.segmentNames(rendition.name, in: directory) {
                let fragments = try FragmentedMP4.fragments(
                    inSegment: try Self.read("\(directory)/\(name)"),
                    tracks: tracks
                )
                ticks += fragments.reduce(UInt64(0)) { $0 + $1.duration }
            }
            return last.chunk.offset + Int64((Double(ticks) * 1e6 / Double(track.timescale)).rounded())
        } catch {
            throw MediaError(.encodeFailed, "chunk \(last.chunk.index) of the ladder cannot be read: \(error)")
        }
    }

    /// Encodes the last chunk again into its directory, its pictures lasting until `end` (µs
    /// from the range's start): its last picture repeated on the ladder's grid.
    func extendChunk(_ joined: LadderChunk.Written, to end: Int64) throws(MediaError) {
        var chunk = joined.chunk
        chunk.end = end
        try? FileManager.default.removeItem(atPath: joined.directory)
        let session = try LadderSession(
            asset: try Asset(location: asset.location, limits: asset.limits),
            options: options,
            timeRange: joined.range,
            scope: .chunk(chunk)
        )
        _ = try session.run(directory: joined.directory)
    }

    /// `NAME-00001.m4s`… in `directory`, in order.
    static func segmentNames(_ name: String, in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { file in
            file.hasPrefix("\(name)-") && file.hasSuffix(".m4s")
                && file.dropFirst(name.count + 1).dropLast(4).allSatisfy(\.isNumber)
        }.sorted()
    }

    static func number(_ segment: String) -> Int {
        Int(String(segment.dropLast(4).reversed().prefix(while: \.isNumber).reversed())) ?? -1
    }
}
