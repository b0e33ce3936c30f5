import Foundation

/// A waveform job's `peaks.json` (audiowaveform's format: `bits`, `channels` and `data`, a min
/// and a max per channel per pixel) drawn as inline SVG on the server: the loudest of the
/// channels at each of `columns` columns, as one filled shape, scaled to its loudest peak (a
/// quiet recording still shows its shape, as audio editors draw it). Numbers only go into it.
public enum WaveformSVG {
    public static let columns = 600
    /// The file a waveform job writes its peaks to (`WaveformOutputs.jsonName`).
    public static let peaksName = "peaks.json"
    static let height = 120.0
    /// A bigger file is linked, not drawn (an hour at a fine resolution is megabytes).
    public static let maximumBytes = 4 << 20

    /// The SVG for the file's bytes, or `nil` when they are not peaks this can draw.
    public static func draw(_ data: Data) -> String? {
        guard data.count <= maximumBytes,
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let values = object["data"] as? [NSNumber], !values.isEmpty
        else { return nil }
        let bits = (object["bits"] as? Int) ?? 16
        let channels = (object["channels"] as? Int) ?? 1
        guard bits == 8 || bits == 16, (1...64).contains(channels), values.count % (2 * channels) == 0 else {
            return nil
        }
        let peaks = values.map(\.doubleValue)
        let loudest = peaks.map(abs).max() ?? 0
        return draw(peaks: peaks, channels: channels, full: loudest > 0 ? loudest : (bits == 8 ? 128 : 32768))
    }

    /// `peaks`: per pixel, a min and a max for each channel in turn; `full`: the value drawn at
    /// the top and the bottom.
    static func draw(peaks: [Double], channels: Int, full: Double) -> String {
        let pixels = peaks.count / (2 * channels)
        let columns = min(Self.columns, pixels)
        var lows: [Double] = []
        var highs: [Double] = []
        for column in 0..<columns {
            let range =
                (column * pixels / columns)..<max(column * pixels / columns + 1, (column + 1) * pixels / columns)
            var low = 0.0
            var high = 0.0
            for pixel in range {
                for channel in 0..<channels {
                    let base = (pixel * channels + channel) * 2
                    low = min(low, peaks[base])
                    high = max(high, peaks[base + 1])
                }
            }
            lows.append(low)
            highs.append(high)
        }
        let middle = height / 2
        func y(_ value: Double) -> String {
            String(format: "%.1f", middle - max(-1, min(1, value / full)) * middle)
        }
        let step = Double(Self.columns) / Double(max(columns, 1))
        let top = highs.indices.map { "\(String(format: "%.1f", Double($0) * step)),\(y(highs[$0]))" }
        let bottom = lows.indices.reversed().map { "\(String(format: "%.1f", Double($0) * step)),\(y(lows[$0]))" }
        return """
            <svg class="waveform" viewBox="0 0 \(Self.columns) \(Int(height))" role="img" \
            aria-label="The audio's waveform: its peaks over time, scaled to the loudest"><line x1="0" y1="\(Int(middle))" \
            x2="\(Self.columns)" y2="\(Int(middle))" stroke="#bbb"/><polygon fill="#2a6fdb" \
            points="\((top + bottom).joined(separator: " "))"/></svg>
            """
    }
}
