/// Text safe for a terminal or a line-oriented log: control characters (escape sequences, CR,
/// LF, DEL, C1) and the invisible marks that reorder or hide text (bidi controls, zero-width
/// characters, line and paragraph separators) written as escapes (`\e`, `\r`, `\n`,
/// `\u{202E}`). Jobs hold what tenants sent (paths, metadata, messages naming them): shown raw
/// they could rewrite an operator's screen or hide a line.
public enum TerminalText {
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var shown = ""
        shown.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A: shown += "\\n"
            case 0x0D: shown += "\\r"
            case 0x09: shown += "\\t"
            case 0x1B: shown += "\\e"
            case 0x00..<0x20, 0x7F: shown += "\\x" + hex(scalar.value, digits: 2)
            default:
                if needsEscape(scalar) {
                    shown += "\\u{" + hex(scalar.value, digits: 1) + "}"
                } else {
                    shown.unicodeScalars.append(scalar)
                }
            }
        }
        return shown
    }

    /// `text` with only the invisible marks written as escapes (`\u{202E}`), control characters
    /// left as they are: for a page, where a line break is markup but an override would turn
    /// `invoice-\u{202E}gpj.exe` into `invoice-exe.jpg` on screen.
    public static func revealingMarks(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isInvisibleMark) else { return text }
        var shown = ""
        shown.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            if isInvisibleMark(scalar) {
                shown += "\\u{" + hex(scalar.value, digits: 1) + "}"
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return shown
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00..<0x20, 0x7F, 0x80..<0xA0: true
        default: isInvisibleMark(scalar)
        }
    }

    /// Arabic letter mark, zero-width space/joiners, bidi marks and embeddings, line and
    /// paragraph separators, bidi isolates, the byte order mark.
    private static func isInvisibleMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x180E, 0x200B...0x200F, 0x2028...0x202E, 0x2060...0x2069, 0xFEFF: true
        default: false
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
