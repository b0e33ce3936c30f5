import Foundation
import JobctlCore
import Media
import ObjectStorage
import Queue

extension SplitJob {
    /// What a child of a split export recorded of the part it wrote (its result's `part`), so
    /// that the join uses a part only while it is that file: parts wait in a scratch directory
    /// or bucket that sweeps, lifecycle rules and people can empty, truncate or mix up.
    struct PartRecord: Codable, Sendable, Hashable {
        /// The key of the record in a child's result.
        static let key = "part"

        var bytes: Int64
        /// `nil` in a row written before parts were hashed (then only the size is compared).
        var sha256: String?
        /// A video segment: the frames its encode was given, the plan's unless the source is
        /// damaged there (the join's proof holds the file to it).
        var frames: Int?
        /// The audio: its samples as the join counts them (`SegmentJoin.audioSamples`).
        var samples: Int64?

        /// The record of the part just written at `path` (on a thread of its own: it reads the file).
        static func of(_ path: String, part: ExportPart, frames: Int?, limits: ResourceLimits) throws -> PartRecord {
            let (bytes, digest): (Int64?, String)
            do throws(S3Error) {
                (bytes, digest) = (try size(of: path), try FileDigest.sha256(of: path))
            } catch {
                throw JobError(
                    code: .outputUnwritable,
                    message: "the part \(path) cannot be read back: \(error.message)"
                )
            }
            return PartRecord(
                bytes: bytes ?? 0,
                sha256: digest,
                frames: part == .video ? frames : nil,
                samples: part == .audio ? try SegmentJoin.audioSamples(of: path, limits: limits) : nil
            )
        }

        /// What `child` recorded of its part: its record, or for a row from before records its
        /// result's size alone; `nil` when it says nothing.
        static func of(_ child: Job) -> PartRecord? {
            if let record = try? child.result?[key]?.decoded(as: PartRecord.self) { return record }
            return child.result?["bytes"]?.doubleValue.map { PartRecord(bytes: Int64($0)) }
        }

        /// Why the file at `path` is not the part `record` describes (`nil`: it is): missing,
        /// another size, other bytes, or sound that is not the sound recorded. Without a record,
        /// only that it is there (and holds sound, for the audio).
        static func problem(at path: String, part: ExportPart, record: PartRecord?, limits: ResourceLimits) -> String? {
            guard let size = try? size(of: path) else { return "it is missing from the scratch" }
            if let record {
                guard size == record.bytes else { return "it holds \(size) bytes, its child wrote \(record.bytes)" }
                if let sha256 = record.sha256, (try? FileDigest.sha256(of: path)) != sha256 {
                    return "its bytes are not those its child wrote (another SHA-256)"
                }
            }
            guard part == .audio else { return nil }
            guard let held = try? SegmentJoin.audioSamples(of: path, limits: limits) else {
                return "it holds no audio track"
            }
            if let samples = record?.samples, held != samples {
                return "it holds \(held) samples, its child wrote \(samples)"
            }
            return nil
        }

        private static func size(of path: String) throws(S3Error) -> Int64? {
            do {
                return (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value
            } catch {
                throw S3Error(.failed, "\(path) cannot be read: \(error.localizedDescription)")
            }
        }
    }
}

extension SplitJoinJob {
    /// The parts that are not what their children wrote (each checked against its record,
    /// the audio first as index -1), with the reason; missing ones included.
    func damagedParts(
        _ paths: [String],
        audio: String?,
        missing: Set<String>
    ) async throws -> [(index: Int, reason: String)] {
        let children = segments.map(\.job)
        let (audioChild, limits) = (self.audio, context.limits)
        return try await onDedicatedThread("jobctl.parts") { () -> [(index: Int, reason: String)] in
            var damaged: [(index: Int, reason: String)] = []
            func check(_ path: String, _ part: ExportPart, _ child: Job, index: Int) {
                let lost = missing.contains((path as NSString).lastPathComponent)
                let record = SplitJob.PartRecord.of(child)
                let problem = SplitJob.PartRecord.problem(at: path, part: part, record: record, limits: limits)
                if let reason = lost ? "it is missing from the scratch" : problem { damaged.append((index, reason)) }
            }
            if let audio, let audioChild { check(audio, .audio, audioChild, index: -1) }
            for (index, path) in paths.enumerated() { check(path, .video, children[index], index: index) }
            return damaged
        }
    }

    /// A part made again, here, as its child would have: a video segment (returns the frames
    /// its encode was given) or the audio.
    func remake(_ child: Job, part: ExportPart, to path: String) async throws -> Int? {
        try? FileManager.default.removeItem(atPath: path)
        let input = try JobPaths.input(of: job, context: context)
        let asset = try await ExportJob.openInput(job, path: input, context: context)
        let segment = try child.splitSegment()
        let encode = PartEncode(
            part,
            range: try child.timeRange(),
            first: segment?.index == 0,
            asset: asset,
            preset: preset
        )
        let session = encode.session(
            asset: asset,
            preset: preset,
            format: format,
            outputPath: path,
            temporaryTag: context.lease.temporaryTag
        )
        let result = try await run(session)
        return result.tracks.first { $0.mediaType == .video }?.frames.map { Int($0) }
    }

    /// A child's encode speed (frames per second of its run, to a tenth).
    static func fps(of child: Job) -> Double? {
        guard child.finishedAt != nil else { return nil }
        return child.videoFramesPerSecond().map { ($0 * 10).rounded() / 10 }
    }
}
