import Foundation
import Queue

/// A split job's parts as one bar (server-drawn SVG): a segment per part, as wide as the media
/// it covers (equal widths when a part's length is not known), coloured by the worker that
/// runs or ran it, filled as far as its progress, outlined red when it failed. Each segment
/// has a title for pointers and screen readers; a legend names the workers.
public enum PartsBar {
    static let width = 600.0
    static let height = 28.0
    static let palette = ["#2a6fdb", "#e07b00", "#1a9e5b", "#8e44ad", "#c0392b", "#16a2b8", "#7f8c8d", "#b58900"]

    /// The SVG for `parts` in order, or `nil` without parts.
    public static func draw(_ parts: [Job]) -> String? {
        guard !parts.isEmpty else { return nil }
        let lengths = parts.map { $0.range?.duration ?? 0 }
        let known = lengths.allSatisfy { $0 > 0 }
        let total = known ? lengths.reduce(0, +) : Double(parts.count)
        var workers: [String] = []
        for worker in parts.compactMap(\.worker) where !workers.contains(worker) { workers.append(worker) }
        func color(_ worker: String?) -> String {
            worker.flatMap { workers.firstIndex(of: $0) }.map { palette[$0 % palette.count] } ?? "#cccccc"
        }
        var x = 0.0
        var shapes = ""
        for (index, part) in parts.enumerated() {
            let share = (known ? lengths[index] : 1) / total * width
            let done = part.status == .completed ? 1 : min(max(part.progress, 0), 1)
            let status = DashboardText.status(part.status)
            let title =
                "Part \(index + 1): \(status)" + (part.worker.map { " on \($0)" } ?? "")
                + (part.status == .reading ? ", \(Int((done * 100).rounded(.down))) %" : "")
            let outline = part.status == .failed ? "#c0392b" : "#ffffff"
            shapes += """
                <g><title>\(SVGChart.escaped(title))</title>\
                <rect x="\(format(x))" y="0" width="\(format(share))" height="\(Int(height))" fill="#eeeeee" \
                stroke="\(outline)" stroke-width="2"/>\
                <rect x="\(format(x + 1))" y="1" width="\(format(max(0, share - 2) * done))" height="\(Int(height) - 2)" \
                fill="\(color(part.worker))"/></g>
                """
            x += share
        }
        let legend = workers.enumerated().map { index, worker in
            let left = 4 + Double(index % 4) * 150
            let top = height + 16 + Double(index / 4) * 16
            return """
                <rect x="\(format(left))" y="\(format(top - 10))" width="10" height="10" fill="\(color(worker))"/>\
                <text x="\(format(left + 14))" y="\(format(top))">\(SVGChart.escaped(String(worker.prefix(20))))</text>
                """
        }
        .joined()
        let fullHeight = height + 8 + Double((workers.count + 3) / 4) * 16
        let summary = "\(parts.count) parts, \(parts.filter { $0.status == .completed }.count) completed"
        return """
            <svg class="parts" viewBox="0 0 \(Int(width)) \(Int(fullHeight))" role="img" \
            aria-label="\(summary)" xmlns="http://www.w3.org/2000/svg">\(shapes)\(legend)</svg>
            """
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
