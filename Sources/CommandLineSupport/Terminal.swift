import Foundation
import JobctlCore
import Synchronization

/// Writing to the terminal: stderr lines, JSON on stdout, and a progress bar when stderr is a TTY.
package enum Terminal {
    package static var stderrIsTTY: Bool { isatty(STDERR_FILENO) == 1 }

    package static func printError(_ line: String) {
        FileHandle.standardError.write(Data((shown(line) + "\n").utf8))
    }

    /// `text` safe for a terminal (`TerminalText.escaped`): tenants' strings never reach it raw.
    package static func shown(_ text: String) -> String { TerminalText.escaped(text) }

    /// Stable JSON: sorted keys, indented, slashes not escaped.
    package static func printJSON<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    /// `1.5 MB`, `312 KB`, `900 B`.
    package static func bytes(_ count: Int64) -> String {
        let value = Double(count)
        if value >= 1_000_000_000 { return String(format: "%.2f GB", value / 1e9) }
        if value >= 1_000_000 { return String(format: "%.1f MB", value / 1e6) }
        if value >= 1_000 { return String(format: "%.0f KB", value / 1e3) }
        return "\(count) B"
    }

    /// `3.000 s`.
    package static func seconds(_ value: Double) -> String { String(format: "%.3f s", value) }
}

/// A one-line progress bar redrawn in place on stderr: `[=========>      ]  42%  1.3/3.0 s  2.1x`.
package final class ProgressBar: Sendable {
    private let total: Double?
    private let started = Date()
    private let state = Mutex((drawn: false, finished: false))

    /// - Parameter total: seconds of media the operation produces, if known.
    package init(total: Double?) { self.total = total }

    package func draw(fraction: Double) {
        state.withLock { state in
            guard !state.finished else { return }
            state.drawn = true
            redraw(fraction: fraction)
        }
    }

    private func redraw(fraction: Double) {
        let width = 30
        let filled = Int((fraction * Double(width)).rounded(.down))
        let bar =
            String(repeating: "=", count: filled)
            + (filled < width ? ">" + String(repeating: " ", count: width - filled - 1) : "")
        var line = String(format: "[%@] %3d%%", bar, Int(fraction * 100))
        if let total {
            let done = fraction * total
            line += String(format: "  %.1f/%.1f s", done, total)
            let elapsed = Date().timeIntervalSince(started)
            if elapsed > 0.5 && done > 0 { line += String(format: "  %.1fx", done / elapsed) }
        }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
    }

    /// Erases the bar.
    package func clear() {
        state.withLock { state in
            state.finished = true
            if state.drawn { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        }
    }
}
