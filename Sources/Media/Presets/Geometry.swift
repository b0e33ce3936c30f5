/// The size of a picture as it is displayed: square pixels, rotation applied.
public struct PictureSize: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// A maximum size as written on the command line and in API requests: `320x180` (a box),
    /// `320x` (a width), `x180` (a height); sides up to 16384.
    public init?(maximum text: String) {
        let parts = text.lowercased().split(separator: "x", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let width = parts[0].isEmpty ? 0 : Int(parts[0])
        let height = parts[1].isEmpty ? 0 : Int(parts[1])
        guard let width, let height, width >= 0, height >= 0, width + height > 0, width <= 16384, height <= 16384
        else { return nil }
        self.init(width: width, height: height)
    }

    public var description: String { "\(width)x\(height)" }
}

/// Fit-inside-the-box scaling (docs/spec.md §3).
enum Fit {
    /// The displayed size of a coded `width`x`height` picture with sample aspect ratio `sar`
    /// (num/den; invalid means square) shown rotated by `rotation` degrees clockwise.
    static func displaySize(
        width: Int,
        height: Int,
        sar: (num: Int, den: Int),
        rotation: Int
    ) -> (width: Double, height: Double) {
        let aspect = sar.num > 0 && sar.den > 0 ? Double(sar.num) / Double(sar.den) : 1
        let displayed = (width: Double(width) * aspect, height: Double(height))
        return rotation % 180 == 0 ? displayed : (displayed.height, displayed.width)
    }

    /// The output size for a displayed size and a box: fits inside the box with the long sides
    /// together (the box has no orientation), keeps the display aspect ratio, never upscales,
    /// and has even dimensions (at least 2). Without a box, the displayed size made even.
    ///
    /// The same arithmetic as the `scale` expression printed by `presets` (`Preset+FFmpeg.swift`).
    static func outputSize(display: (width: Double, height: Double), box: (width: Int, height: Int)?) -> PictureSize {
        var scale = 1.0
        if let box {
            let long = Double(max(box.width, box.height))
            let short = Double(min(box.width, box.height))
            let landscape = display.width >= display.height
            let boxWidth = landscape ? long : short
            let boxHeight = landscape ? short : long
            scale = min(1, min(boxWidth / display.width, boxHeight / display.height))
        }
        func even(_ length: Double) -> Int {
            let rounded = 2 * (length * scale / 2).rounded()
            let limit = 2 * (length / 2).rounded(.towardZero)
            return max(2, Int(min(rounded, limit)))
        }
        return PictureSize(width: even(display.width), height: even(display.height))
    }
}
