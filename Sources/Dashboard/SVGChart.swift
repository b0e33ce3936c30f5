import Foundation

/// Small server-side charts for the fleet page: inline SVG made from numbers and fixed labels
/// only (nothing a user typed), so a page needs no charting script. Each chart has a title and
/// a text summary for screen readers.
public enum SVGChart {
    public static let width = 600
    public static let height = 160
    static let margin = (left: 44, right: 8, top: 10, bottom: 18)

    /// A series of a chart: its name, colour and one value per minute (`nil`: not known).
    public struct Series: Sendable {
        public let name: String
        public let color: String
        public let values: [Double?]

        public init(_ name: String, color: String, _ values: [Double?]) {
            self.name = name
            self.color = color
            self.values = values
        }
    }

    /// Stacked bars, one per minute.
    public static func bars(title: String, unit: String, _ series: [Series]) -> String {
        let count = series.map(\.values.count).max() ?? 0
        let totals = (0..<count).map { index in series.reduce(0) { $0 + (value($1, index) ?? 0) } }
        let top = niceMaximum(totals.max() ?? 0)
        let plot = plotArea
        let slot = count > 0 ? Double(plot.width) / Double(count) : 0
        var shapes = ""
        for index in 0..<count {
            var base = 0.0
            for item in series {
                guard let amount = value(item, index), amount > 0 else { continue }
                let y0 = y(base, top: top)
                let y1 = y(base + amount, top: top)
                shapes += rect(
                    x: Double(plot.x) + Double(index) * slot + 0.5,
                    y: y1,
                    width: max(1, slot - 1),
                    height: y0 - y1,
                    color: item.color
                )
                base += amount
            }
        }
        return frame(title: title, unit: unit, top: top, series: series, count: count, shapes: shapes)
    }

    /// Lines, one point per minute; a gap where a value is not known.
    public static func lines(title: String, unit: String, _ series: [Series]) -> String {
        let count = series.map(\.values.count).max() ?? 0
        let top = niceMaximum(series.flatMap { $0.values.compactMap { $0 } }.max() ?? 0)
        let plot = plotArea
        let step = count > 1 ? Double(plot.width) / Double(count - 1) : 0
        var shapes = ""
        for item in series {
            var path = ""
            var drawing = false
            for index in 0..<count {
                guard let amount = value(item, index) else {
                    drawing = false
                    continue
                }
                let (x, y) = (format(Double(plot.x) + Double(index) * step), format(y(amount, top: top)))
                path += (drawing ? " L" : " M") + "\(x),\(y)"
                drawing = true
                // A point with no neighbour would draw nothing as a line.
                if value(item, index - 1) == nil && value(item, index + 1) == nil {
                    shapes += "<circle cx=\"\(x)\" cy=\"\(y)\" r=\"2.5\" fill=\"\(item.color)\"/>"
                }
            }
            if !path.isEmpty {
                shapes += "<path d=\"\(path.dropFirst())\" fill=\"none\" stroke=\"\(item.color)\" stroke-width=\"2\"/>"
            }
        }
        return frame(title: title, unit: unit, top: top, series: series, count: count, shapes: shapes)
    }

    // MARK: Drawing

    static var plotArea: (x: Int, y: Int, width: Int, height: Int) {
        (
            margin.left, margin.top, width - margin.left - margin.right,
            height - margin.top - margin.bottom
        )
    }

    static func value(_ series: Series, _ index: Int) -> Double? {
        series.values.indices.contains(index) ? series.values[index] : nil
    }

    static func y(_ value: Double, top: Double) -> Double {
        let plot = plotArea
        return Double(plot.y + plot.height) - (top > 0 ? value / top : 0) * Double(plot.height)
    }

    /// 1, 2 or 5 times a power of ten, at least `value` (at least 1).
    static func niceMaximum(_ value: Double) -> Double {
        guard value > 1 else { return 1 }
        let power = pow(10, (log10(value)).rounded(.down))
        for factor in [1.0, 2, 5, 10] where factor * power >= value { return factor * power }
        return 10 * power
    }

    static func format(_ value: Double) -> String { String(format: "%.1f", value) }

    static func rect(x: Double, y: Double, width: Double, height: Double, color: String) -> String {
        "<rect x=\"\(format(x))\" y=\"\(format(y))\" width=\"\(format(width))\" height=\"\(format(height))\" fill=\"\(color)\"/>"
    }

    static func frame(title: String, unit: String, top: Double, series: [Series], count: Int, shapes: String) -> String
    {
        let plot = plotArea
        let bottom = plot.y + plot.height
        let summary = series.map { item -> String in
            let known = item.values.compactMap { $0 }
            let latest = known.last.map { "latest \(label($0)) \(unit)" } ?? "no data"
            return "\(item.name): \(latest), highest \(label(known.max() ?? 0)) \(unit)"
        }
        .joined(separator: "; ")
        let legend = series.enumerated().map { index, item in
            let x = plot.x + index * 130
            return "<rect x=\"\(x)\" y=\"\(height - 10)\" width=\"10\" height=\"8\" fill=\"\(item.color)\"/>"
                + "<text x=\"\(x + 14)\" y=\"\(height - 2)\">\(escaped(item.name))</text>"
        }
        .joined()
        return """
            <svg class="chart" viewBox="0 0 \(width) \(height)" role="img" aria-label="\(escaped(title)): \(escaped(summary))" \
            xmlns="http://www.w3.org/2000/svg"><title>\(escaped(title))</title>\
            <line x1="\(plot.x)" y1="\(bottom)" x2="\(plot.x + plot.width)" y2="\(bottom)" stroke="#d0d7de"/>\
            <line x1="\(plot.x)" y1="\(plot.y)" x2="\(plot.x + plot.width)" y2="\(plot.y)" stroke="#eee"/>\
            <text x="\(plot.x - 4)" y="\(plot.y + 8)" text-anchor="end">\(label(top))</text>\
            <text x="\(plot.x - 4)" y="\(bottom)" text-anchor="end">0</text>\
            \(shapes)\(legend)</svg>
            """
    }

    /// A number as a label: whole when it is, one decimal otherwise, with k and M.
    static func label(_ value: Double) -> String {
        switch value {
        case 1_000_000...: String(format: "%.1fM", value / 1_000_000)
        case 10_000...: String(format: "%.0fk", value / 1000)
        case _ where value == value.rounded(): String(format: "%.0f", value)
        default: String(format: "%.1f", value)
        }
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
