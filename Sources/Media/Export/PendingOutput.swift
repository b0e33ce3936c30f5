import Foundation

/// An export whose file is complete but not yet at its destination.
public struct FinishedExport: ~Copyable, Sendable {
    public let result: ExportResult
    public let output: PendingOutput

    /// The output, to commit or discard later (the result is copied out first).
    public consuming func takeOutput() -> PendingOutput { output }
}

/// A finished file not yet at its destination, consumed exactly once: `commit()` renames it
/// into place, `discard()` deletes it, and one dropped without either is deleted. `~Copyable`
/// makes "exactly once" a fact the compiler checks; the writer underneath makes a discard after
/// a commit a no-op (a value's deinit runs after its consuming methods).
public struct PendingOutput: ~Copyable, Sendable {
    private let writer: AssetWriter

    init(writer: AssetWriter) { self.writer = writer }

    /// Where the finished file waits.
    public var temporaryPath: String { writer.temporaryPath }

    public consuming func commit() throws(MediaError) {
        try writer.commit()
    }

    public consuming func discard() {
        writer.discard()
    }

    deinit {
        writer.discard()
    }
}
