import Foundation
import Streaming

/// The join of a ladder split across workers: the chunks' video segments moved onto one
/// timeline and staged with the sound encoded here. No picture is decoded or encoded again.
extension LadderSession {
    /// Stages every video rendition's segments from `chunks` (directories, in order) into
    /// `files`, each segment's decode times moved by what the chunks before it last, and the
    /// initialization segment, which every chunk must have written byte for byte alike.
    func joinChunks(_ chunks: [String], into files: StagedFiles) throws(MediaError) -> [LadderPackage.Rendition] {
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
            var reference: [UInt8]?
            var tracks: [FragmentedMP4.Track] = []
            var segments: [String] = []
            var offset: Int64 = 0
            for (index, directory) in chunks.enumerated() {
                let own = try read((directory as NSString).appendingPathComponent(initialization))
                if let reference {
                    guard own == reference else {
                        throw MediaError(
                            .encodeFailed,
                            "chunk \(index) of the ladder wrote another \(initialization) than chunk 0: its encoder differs (another FFmpeg or x264 on that worker?)"
                        )
                    }
                } else {
                    reference = own
                    do { tracks = try FragmentedMP4.tracks(inInitialization: own) } catch {
                        throw MediaError(.encodeFailed, "\(initialization) of chunk 0 cannot be read: \(error)")
                    }
                }
                guard let track = tracks.first else {
                    throw MediaError(.encodeFailed, "\(initialization) has no track")
                }
                let names = Self.segmentNames(rendition.name, in: directory)
                guard !names.isEmpty else {
                    throw MediaError(
                        .outputUnwritable,
                        "chunk \(index) of the ladder has no \(rendition.name) segment in \(directory)"
                    )
                }
                if let last = segments.last, Self.number(last) + 1 != Self.number(names[0]) {
                    throw MediaError(
                        .encodeFailed,
                        "chunk \(index) of the ladder starts at \(names[0]) after \(last): its segments do not continue the ladder's"
                    )
                }
                var lasted: Int64 = 0
                for name in names {
                    let bytes = try read((directory as NSString).appendingPathComponent(name))
                    do {
                        let fragments = try FragmentedMP4.fragments(inSegment: bytes, tracks: tracks)
                        lasted += fragments.reduce(Int64(0)) { $0 + Int64($1.duration) }
                        try files.write(name, try FragmentedMP4.rebased(bytes, by: offset, timescale: track.timescale))
                    } catch let error as MediaError {
                        throw error
                    } catch {
                        throw MediaError(.encodeFailed, "\(name) of chunk \(index) cannot be joined: \(error)")
                    }
                    segments.append(name)
                }
                offset += lasted
            }
            try files.write(initialization, reference ?? [])
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

    /// `NAME-00001.m4s`… in `directory`, in order.
    static func segmentNames(_ name: String, in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { file in
            file.hasPrefix("\(name)-") && file.hasSuffix(".m4s")
                && file.dropFirst(name.count + 1).dropLast(4).allSatisfy(\.isNumber)
        }.sorted()
    }

    static func number(_ segment: String) -> Int {
        Int(segment.dropLast(4).reversed().prefix { $0.isNumber }.reversed().map(String.init).joined()) ?? -1
    }
}
