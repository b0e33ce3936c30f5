import CFFmpeg
import Foundation
import JobctlCore

/// How a split export's cuts look (issue 27): the PSNR (luma, dB) of the frame either side of
/// each cut in the joined file against the source's frame shown at the same time, scaled to the
/// output's size. A seam a viewer could see scores well under the file's other frames.
public enum SeamQuality {
    /// For each cut (the start of segments 1…, `cuts` in µs of the output), the PSNR of the
    /// frame before it and of the frame at it. `rangeStart`: where the output starts in the
    /// source (µs). `nil` values: a frame that could not be decoded.
    public static func measure(
        output: String,
        source: String,
        rangeStart: Int64,
        cuts: [Int64],
        limits: ResourceLimits
    ) throws(MediaError) -> [(before: Double?, after: Double?)] {
        guard !cuts.isEmpty else { return [] }
        let times = cuts.flatMap { [max(0, $0 - 1), $0] }
        let scores = try scores(output: output, source: source, rangeStart: rangeStart, times: times, limits: limits)
        return stride(from: 0, to: scores.count, by: 2).map { (scores[$0], scores[$0 + 1]) }
    }

    /// The PSNR of the frame `output` shows at each time (µs) against the source's frame at
    /// `rangeStart` plus that time, scaled to the output's size.
    public static func scores(
        output: String,
        source: String,
        rangeStart: Int64,
        times: [Int64],
        limits: ResourceLimits
    ) throws(MediaError) -> [Double?] {
        guard !times.isEmpty else { return [] }
        let produced = try ImageGenerator(asset: try Asset(location: output, limits: limits))
        produced.toleranceBefore = 0
        produced.toleranceAfter = 0
        let size = produced.imageSize
        let outputLuma = try produced.lumaPlanes(at: times, size: size)
        let original = try ImageGenerator(asset: try Asset(location: source, limits: limits))
        original.toleranceBefore = 0
        original.toleranceAfter = 0
        let sourceLuma = try original.lumaPlanes(at: times.map { $0 + rangeStart }, size: size)
        return times.indices.map { index -> Double? in
            guard let a = outputLuma[index], let b = sourceLuma[index], a.count == b.count, !a.isEmpty else {
                return nil
            }
            var sum = 0.0
            for position in a.indices {
                let difference = Double(a[position]) - Double(b[position])
                sum += difference * difference
            }
            let mse = sum / Double(a.count)
            return mse == 0 ? 100 : (10 * log10(255 * 255 / mse) * 100).rounded() / 100
        }
    }

    /// The scores of a segment's own first and last frames, measured in its file by whoever
    /// encoded it (in parallel, not in the join): the two sides of the cuts around it.
    /// `first`/`last`: whether the segment begins or ends the range (no cut there).
    public static func edges(
        ofSegment path: String,
        source: String,
        encoded: TimeRange,
        cut: SegmentCut,
        first: Bool,
        last: Bool,
        limits: ResourceLimits
    ) -> SegmentEdges {
        var times: [Int64] = []
        // The segment's first frame is at its start (`cut.start` less the margin under it);
        // its last is on screen just before its end (`cut.end`, itself 5 µs under the next).
        if !first { times.append(cut.start + (cut.start > 0 ? 5 : 0)) }
        if !last { times.append(cut.end - 1) }
        guard !times.isEmpty,
            let scores = try? self.scores(
                output: path,
                source: source,
                rangeStart: encoded.start,
                times: times,
                limits: limits
            )
        else { return SegmentEdges() }
        return SegmentEdges(first: first ? nil : scores.first ?? nil, last: last ? nil : scores.last ?? nil)
    }
}

/// The PSNR (luma, dB) of a segment's first and last frames against the source: each is one
/// side of a cut (`SegmentReport.seamPSNR`).
public struct SegmentEdges: Sendable, Hashable, Codable {
    public var first: Double?
    public var last: Double?

    public init(first: Double? = nil, last: Double? = nil) {
        self.first = first
        self.last = last
    }
}

extension ImageGenerator {
    /// The luma plane of the frame shown at each time (`nil` where none was decoded), `size`
    /// wide and high: what the split's seam scores and scene cuts compare.
    func lumaPlanes(at times: [Int64], size: PictureSize) throws(MediaError) -> [[UInt8]?] {
        var planes = [[UInt8]?](repeating: nil, count: times.count)
        try generatePictures(at: times, pixelFormat: AV_PIX_FMT_YUV420P, size: size) { request, _, picture in
            let frame = picture.pointer.pointee
            guard let data = frame.data.0 else { return }
            var plane = [UInt8]()
            plane.reserveCapacity(size.width * size.height)
            for row in 0..<size.height {
                let line = data + row * Int(frame.linesize.0)
                plane.append(contentsOf: UnsafeBufferPointer(start: line, count: size.width))
            }
            planes[request.index] = plane
        } failed: { _, _ in
        }
        return planes
    }
}
